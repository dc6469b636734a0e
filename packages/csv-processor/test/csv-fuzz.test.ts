import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { seededRandom, type Rand } from '@dq/test-support/random';
import { fieldSplitter } from '../src/source/csv-fields.js';
import { frameRecords, type RawRecord } from '../src/source/framer.js';
import { openSource, type SourceItem, type SourceOptions } from '../src/source/index.js';
import { runCli, summaryOf, tempDir, unlimited, useSandbox } from './helpers.js';

/*
 * Differential, property-based tests of the CSV reader (framer.ts, csv-fields.ts, csv-source.ts).
 * Random tables are written the way a spreadsheet writes CSV, read back through the source with
 * the file's bytes delivered in random chunks (one byte each, cut inside multi-byte characters,
 * between CR and LF), and compared with the table: every value byte for byte, every record's line
 * and the byte offset its checkpoint names. Such files with random quotes, line ends and delimiters
 * put in or taken out are read too, against small non-streaming reference parsers of the same
 * dialect (the strict one where the file is clean, one applying the README's rules for broken
 * quoting and records over the size limit to every file), and against invariants every input
 * must keep: no line lost, reading on from a checkpoint gives the same records, the chunking
 * changes nothing. Every case is derived from a seed: a failure names it, and `fuzzCase(seed)` or
 * `mutatedCase(seed)` replays it (CSV_FUZZ_SCALE=n runs n times as many seeds).
 */

/** How the source's read stream is cut into chunks (set per case; the whole file by default). */
const chunking = vi.hoisted(() => ({ cuts: (bytes: Buffer): number[] => [bytes.length] }));

vi.mock('../src/source/input-bytes.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/source/input-bytes.js')>();
  /** The bytes of `stream`, handed on in the chunks `chunking.cuts` asks for. */
  const rechunked = (stream: Readable): Readable =>
    Readable.from(
      (async function* () {
        try {
          const parts: Buffer[] = [];
          for await (const part of stream) parts.push(part as Buffer);
          const bytes = Buffer.concat(parts);
          let at = 0;
          for (const size of chunking.cuts(bytes)) {
            if (size <= 0) continue;
            yield bytes.subarray(at, at + size);
            at += size;
          }
          if (at < bytes.length) yield bytes.subarray(at);
        } finally {
          stream.destroy();
        }
      })(),
    );
  return {
    ...real,
    inputBytes: async (...args: Parameters<typeof real.inputBytes>) => {
      const input = await real.inputBytes(...args);
      return { ...input, stream: (start?: number) => rechunked(input.stream(start)) };
    },
  };
});

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => void ({ dir, cleanup } = await tempDir()));
afterAll(async () => cleanup());

// ---------------------------------------------------------------------------------------------
// Seeded randomness (mulberry32, the sandbox's generator): a failing case replays from its seed.

const rand = seededRandom;

// ---------------------------------------------------------------------------------------------
// Writing tables as a spreadsheet does

const DELIMITERS = [',', ';', '\t', '|'] as const;

/** Pieces values are made of: text, every byte CSV treats specially, and multi-byte characters. */
const PIECES = [
  'a',
  'Z',
  '7',
  ' ',
  '  ',
  '"',
  '""',
  '\r',
  '\n',
  '\r\n',
  'ä',
  '€',
  '😀',
  '𝄞',
  '24" Zoll',
  ',',
  ';',
  '\t',
  '|',
  "'",
  '=1+2',
  'ß',
  '\u00a0',
  '\uFEFF',
];

function randomValue(r: Rand): string {
  if (r.chance(0.15)) return '';
  const n = r.int(1, 5);
  let value = '';
  for (let k = 0; k < n; k++) value += r.pick(PIECES);
  if (r.chance(0.1)) value = ` ${value} `;
  return value;
}

/** Where one record of an encoded document is: its bytes are doc[start, end), the next starts at `next`. */
interface Placement {
  readonly start: number;
  readonly end: number;
  readonly next: number;
  readonly line: number;
  readonly endLine: number;
}

interface Encoded {
  readonly bytes: Buffer;
  /** Header first, then one per data row. */
  readonly records: Placement[];
}

interface Dialect {
  readonly delimiter: string;
  readonly eol: '\n' | '\r\n';
  readonly bom: boolean;
  readonly finalEol: boolean;
  /** 'all': every value quoted; 'needed': only where needed; 'excel': also values holding a quote. */
  readonly quoting: 'all' | 'needed' | 'excel';
  /** Chance of blank lines before a record (skipped by the reader, counted in line numbers). */
  readonly blankLines: number;
}

function randomDialect(r: Rand): Dialect {
  return {
    delimiter: r.pick(DELIMITERS),
    eol: r.pick(['\n', '\r\n'] as const),
    bom: r.chance(0.3),
    finalEol: r.chance(0.6),
    quoting: r.pick(['all', 'needed', 'excel'] as const),
    blankLines: r.pick([0, 0, 0.1, 0.3]),
  };
}

/** A value as written in a CSV file of `dialect`. */
function encodeValue(value: string, d: Dialect, alone: boolean): string {
  const needed = value.startsWith('"') || value.includes(d.delimiter) || value.includes('\r') || value.includes('\n');
  // A row of one empty value written bare would be an empty line, which is no row.
  const quote = needed || d.quoting === 'all' || (d.quoting === 'excel' && value.includes('"')) || (alone && value === '');
  return quote ? `"${value.replaceAll('"', '""')}"` : value;
}

function encodeTable(table: string[][], d: Dialect, r: Rand): Encoded {
  const parts: Buffer[] = [];
  const records: Placement[] = [];
  let offset = 0;
  let line = 1;
  const put = (text: string) => {
    const b = Buffer.from(text, 'utf8');
    parts.push(b);
    offset += b.length;
  };
  if (d.bom) put('\uFEFF');
  table.forEach((row, k) => {
    while (r.chance(d.blankLines)) {
      put(r.pick(['\n', '\r\n']));
      line += 1;
    }
    const text = row.map((v) => encodeValue(v, d, row.length === 1)).join(d.delimiter);
    const start = offset;
    put(text);
    const end = offset;
    const lfs = text.split('\n').length - 1;
    const last = k === table.length - 1;
    if (!last || d.finalEol) put(d.eol);
    records.push({ start, end, next: offset, line, endLine: line + lfs });
    line += lfs + 1;
  });
  return { bytes: Buffer.concat(parts), records };
}

function randomTable(r: Rand): string[][] {
  const width = r.int(1, 5);
  const height = r.int(1, 8);
  const table = Array.from({ length: height + 1 }, () => Array.from({ length: width }, () => randomValue(r)));
  // A byte order mark the file does not start with but the header's first name does could not be
  // told from one the file starts with: such a name is left out.
  table[0]![0] = table[0]![0]!.replace(/^\uFEFF+/, '');
  return table;
}

// ---------------------------------------------------------------------------------------------
// Chunkings

type Cutter = (bytes: Buffer) => number[];

/** Every byte a chunk of its own. */
const oneByte: Cutter = (bytes) => Array.from({ length: bytes.length }, () => 1);

/** Random sizes from 1 to `max`. */
const randomSizes =
  (r: Rand, max: number): Cutter =>
  (bytes) => {
    const cuts: number[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = r.int(1, max);
      cuts.push(size);
      at += size;
    }
    return cuts;
  };

/** A chunk ends after every CR and after the first byte of every multi-byte character. */
const awkward: Cutter = (bytes) => {
  const cuts: number[] = [];
  let from = 0;
  bytes.forEach((b, i) => {
    if (b === 0x0d || b >= 0xc0 || b === 0x22) {
      cuts.push(i + 1 - from);
      from = i + 1;
    }
  });
  cuts.push(bytes.length - from);
  return cuts;
};

function randomCutter(r: Rand): { name: string; cut: Cutter } {
  return r.pick([
    { name: 'whole file', cut: (bytes: Buffer) => [bytes.length] },
    { name: 'one byte per chunk', cut: oneByte },
    { name: 'chunks of 1-3 bytes', cut: randomSizes(r, 3) },
    { name: 'chunks of 1-17 bytes', cut: randomSizes(r, 17) },
    { name: 'cut after CR, quote and lead bytes', cut: awkward },
  ]);
}

// ---------------------------------------------------------------------------------------------
// A reference parser: the whole text at once, one character at a time

interface RefRecord {
  readonly cells: string[];
  readonly line: number;
  readonly endLine: number;
  /** Its length in UTF-8 bytes, line terminator not counted. */
  readonly length: number;
}

/**
 * Parses `text` (decoded) in dq-csv's dialect, without streaming: a `"` opens a quoted field only
 * as a field's first character, `""` inside one is a `"`, a quoted field ends right before the
 * delimiter or the line's end; a line ends in LF or CRLF (a CR before the end of the input counts
 * as a terminator too); empty lines are skipped; a byte order mark at the start is dropped. Any
 * other input (an unclosed quote, text after a closing quote, a bare CR) is an error: this
 * parser does not recover, it only says which files are clean.
 */
function referenceParse(text: string, delimiter: string): { records: RefRecord[] } | { error: string } {
  if (text.startsWith('\uFEFF')) text = text.slice(1);
  const records: RefRecord[] = [];
  let i = 0;
  let line = 1;
  while (i < text.length) {
    const startLine = line;
    const start = i;
    const cells: string[] = [];
    let endLine: number;
    let stop: number;
    let empty = false;
    for (;;) {
      if (text[i] === '"') {
        let value = '';
        i += 1;
        for (;;) {
          if (i >= text.length) return { error: `a quote on line ${startLine} is never closed` };
          if (text[i] === '"') {
            if (text[i + 1] === '"') {
              value += '"';
              i += 2;
              continue;
            }
            i += 1;
            break;
          }
          if (text[i] === '\n') line += 1;
          value += text[i];
          i += 1;
        }
        cells.push(value);
        if (text[i] === delimiter) {
          i += 1;
          continue;
        }
        endLine = line;
        stop = i;
        if (i >= text.length || (text[i] === '\r' && i + 1 === text.length)) {
          i = text.length;
          break;
        }
        if (text[i] === '\n' || text.startsWith('\r\n', i)) {
          i = text.indexOf('\n', i) + 1;
          line += 1;
          break;
        }
        return { error: `text after a closing quote on line ${line}` };
      }
      let j = i;
      while (j < text.length && text[j] !== delimiter && text[j] !== '\n') j += 1;
      let value = text.slice(i, j);
      const last = j >= text.length || text[j] === '\n';
      stop = j;
      if (last && value.endsWith('\r')) {
        value = value.slice(0, -1);
        stop = j - 1;
      }
      if (value.includes('\r')) return { error: `a bare CR on line ${line}` };
      cells.push(value);
      i = j + 1;
      if (!last) continue;
      endLine = line;
      if (j < text.length) line += 1;
      // The record's own text, its terminator's CR not counted: '' or a lone CR is an empty line.
      const raw = text.slice(start, j).replace(/\r$/, '');
      empty = raw === '' || raw === '\r';
      break;
    }
    if (!empty) records.push({ cells, line: startLine, endLine, length: Buffer.byteLength(text.slice(start, stop)) });
  }
  return { records };
}

/** Splits one record's text into fields in dq-csv's dialect; undefined when its quoting is broken. */
function referenceSplit(raw: string, delimiter: string): string[] | undefined {
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    if (raw[i] === '"') {
      let value = '';
      for (i += 1; ;) {
        if (i >= raw.length) return undefined;
        if (raw[i] === '"' && raw[i + 1] === '"') {
          value += '"';
          i += 2;
        } else if (raw[i] === '"') {
          i += 1;
          break;
        } else {
          value += raw[i];
          i += 1;
        }
      }
      cells.push(value);
      if (i === raw.length) return cells;
      if (raw[i] !== delimiter) return undefined;
      i += 1;
      continue;
    }
    const j = raw.indexOf(delimiter, i) === -1 ? raw.length : raw.indexOf(delimiter, i);
    if (raw.slice(i, j).includes('\r')) return undefined;
    cells.push(raw.slice(i, j));
    if (j === raw.length) return cells;
    i = j + 1;
  }
}

type Outcome = { cells: string[] } | { code: string };

/**
 * What dq-csv makes of any file, broken or not, as its README describes it, computed on the whole
 * text at once: a record runs to the first LF outside a quoted field; one that spans lines but
 * whose quote is never closed, is followed by text after its closing quote, or (within the size
 * limit) does not split into fields, or splits into another width than the header's while its
 * first line alone has the header's width (a stray quote), costs only its first line (a reject,
 * too large when that line is); a record over the limit is one `record-too-large` reject; empty
 * lines are skipped. Undefined when the header row itself cannot be read.
 */
function referenceRecover(
  text: string,
  delimiter: string,
  maxRecordBytes: number,
): { header: string[]; items: { outcome: Outcome; line: number; endLine: number }[] } | undefined {
  const bom = text.startsWith('\uFEFF') ? 1 : 0;
  const records: { outcome: Outcome; line: number; endLine: number }[] = [];
  let header: string[] | undefined;
  let i = 0;
  let line = 1;
  const bytes = (from: number, to: number) => Buffer.byteLength(text.slice(from, to));
  while (i < text.length) {
    // Frame: find the record's end and what its quotes did.
    let k = i === 0 ? bom : i;
    let fieldStart = true;
    let inQuote = false;
    let broken = false;
    let lfs = 0;
    for (; k < text.length; k++) {
      const c = text[k];
      if (inQuote) {
        if (c === '"' && text[k + 1] === '"') k += 1;
        else if (c === '"') {
          inQuote = false;
          const after = text[k + 1];
          if (after !== undefined && after !== delimiter && after !== '\r' && after !== '\n') broken = true;
        } else if (c === '\n') lfs += 1;
        fieldStart = false;
        continue;
      }
      if (c === '\n') break;
      if (c === '"' && fieldStart) inQuote = true;
      fieldStart = c === delimiter;
    }
    const end = k; // its LF, or the end of the text
    const stop = text[end - 1] === '\r' && end > i ? end - 1 : end;
    const raw = text.slice(i, stop);
    if (raw === '' || raw === '\r' || (i === 0 && raw === '\uFEFF')) {
      i = end + 1;
      line += 1;
      continue;
    }
    const length = bytes(i, stop);
    const fields = referenceSplit(raw.slice(i === 0 ? bom : 0), delimiter);
    const isRow = header === undefined || fields?.length === header.length;
    // A record that splits, into another width, is framed again only when its first line alone,
    // quotes as plain characters, has the header's width (a stray quote); else it is one record.
    const firstLine = text.slice(i, lfs > 0 ? text.indexOf('\n', i) : stop);
    const stray = fields === undefined || firstLine.split(delimiter).length === header?.length;
    let outcome: Outcome;
    let endLine = line + lfs;
    let next = end + 1;
    if (lfs > 0 && (inQuote || broken || (length <= maxRecordBytes && !isRow && stray))) {
      // Its first line alone.
      const lf = text.indexOf('\n', i);
      const firstStop = text[lf - 1] === '\r' ? lf - 1 : lf;
      outcome = { code: bytes(i, firstStop) > maxRecordBytes ? 'record-too-large' : 'broken-quoting' };
      endLine = line;
      next = lf + 1;
    } else if (length > maxRecordBytes) outcome = { code: 'record-too-large' };
    else if (fields === undefined) outcome = { code: 'broken-quoting' };
    else if (!isRow) outcome = { code: 'column-count' };
    else outcome = { cells: fields };
    if (header === undefined) {
      if (!('cells' in outcome)) return undefined;
      header = outcome.cells;
    } else records.push({ outcome, line, endLine });
    line = endLine + 1;
    i = next;
  }
  return header && { header, items: records };
}

// ---------------------------------------------------------------------------------------------
// Reading through the project's source

interface Read {
  readonly header: readonly string[];
  readonly items: SourceItem[];
}

let fileNo = 0;

async function writeDoc(bytes: Buffer): Promise<string> {
  fileNo += 1;
  const path = join(dir, `fuzz-${fileNo}.csv`);
  await writeFile(path, bytes);
  return path;
}

async function readSource(path: string, cut: Cutter, options: Partial<SourceOptions> = {}): Promise<Read> {
  chunking.cuts = cut;
  try {
    const source = await openSource({ path, format: 'csv', ...options });
    const items: SourceItem[] = [];
    for await (const item of source.items) items.push(item);
    return { header: source.header ?? [], items };
  } finally {
    chunking.cuts = (bytes) => [bytes.length];
  }
}

async function frameAll(bytes: Buffer, cut: Cutter, delimiter: string, maxRecordBytes?: number): Promise<RawRecord[]> {
  const sizes = cut(bytes);
  const chunks: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    chunks.push(Buffer.from(bytes.subarray(at, at + size)));
    at += size;
  }
  const records: RawRecord[] = [];
  for await (const record of frameRecords(
    (async function* () {
      yield* chunks;
    })(),
    { quotes: true, delimiter, maxRecordBytes },
  ))
    records.push(record);
  return records;
}

/** An item as compared between reads: what a user sees of it. */
const view = (item: SourceItem) =>
  item.kind === 'row'
    ? { row: item.cells, line: item.line, position: item.position }
    : { reject: item.code, line: item.line, raw: item.raw, position: item.position };

/** Runs `body` for each of `count` seeds from `first`, naming the seed and setting of a failure. */
async function forSeeds(first: number, count: number, body: (seed: number, note: (s: string) => void) => Promise<void>): Promise<void> {
  for (let seed = first; seed < first + count; seed++) {
    let notes = '';
    try {
      await body(seed, (s) => (notes += ` ${s}`));
    } catch (err) {
      (err as Error).message = `seed ${seed}${notes}: ${(err as Error).message}`;
      throw err;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Properties

/** One well-formed case: a random table, written, framed and read back. */
async function fuzzCase(seed: number, note: (s: string) => void = () => {}): Promise<void> {
  const r = rand(seed);
  const d = randomDialect(r);
  const table = randomTable(r);
  const { bytes, records } = encodeTable(table, d, r);
  const cutter = randomCutter(r);
  note(`(${JSON.stringify(d)}, ${cutter.name}, file ${JSON.stringify(bytes.toString('latin1'))})`);

  // The reference parser reads the file back as the table: it and the writer agree.
  const ref = referenceParse(bytes.toString('utf8'), d.delimiter);
  expect(ref).toEqual({
    records: table.map((cells, k) => ({ cells, line: records[k]!.line, endLine: records[k]!.endLine, length: records[k]!.end - records[k]!.start })),
  });

  // The framer gives each record's exact bytes, lines and the offset where the next one starts.
  const frames = await frameAll(bytes, cutter.cut, d.delimiter);
  expect(
    frames.map((f) => ({
      bytes: f.bytes.toString('latin1'),
      line: f.line,
      endLine: f.endLine,
      nextOffset: f.nextOffset,
      flags: [f.unclosedQuote, f.tooLarge],
    })),
  ).toEqual(
    records.map((p) => ({
      bytes: bytes.subarray(p.start - (p.start === 3 && d.bom && p.line === 1 ? 3 : 0), p.end).toString('latin1'),
      line: p.line,
      endLine: p.endLine,
      nextOffset: p.next,
      flags: [undefined, undefined],
    })),
  );

  // The source gives the table back, value for value, with each row's line and checkpoint position.
  const path = await writeDoc(bytes);
  const read = await readSource(path, cutter.cut, { delimiter: d.delimiter });
  expect(read.header).toEqual(table[0]);
  expect(read.items.map(view)).toEqual(
    table.slice(1).map((cells, k) => ({
      row: cells,
      line: records[k + 1]!.line,
      position: { records: k + 1, offset: records[k + 1]!.next, line: records[k + 1]!.endLine + 1 },
    })),
  );
  for (const item of read.items)
    for (const [k, cell] of (item.kind === 'row' ? item.cells! : []).entries())
      expect(Buffer.from(cell)).toEqual(Buffer.from(table[item.position.records]![k]!));

  // Read on from a checkpoint: the same rows as the read straight through.
  if (read.items.length > 1) {
    const k = r.int(0, read.items.length - 2);
    const rest = await readSource(path, randomCutter(r).cut, { delimiter: d.delimiter, start: read.items[k]!.position });
    expect(rest.items.map(view)).toEqual(read.items.slice(k + 1).map(view));
  }
}

/** What a mutation inserts: quotes, line ends and delimiters where they break the quoting. */
const INSERTS = ['"', '"', '""', '\r', '\n', '\r\n', ' ', 'DELIM', 'DELIM"', '"DELIM', '"\n'];

/** A random table's file with a few random insertions and deletions: broken or not, whatever it makes. */
function mutatedDoc(r: Rand): { text: string; delimiter: string; width: number } {
  const d = randomDialect(r);
  const table = randomTable(r);
  const chars = Array.from(encodeTable(table, d, r).bytes.toString('utf8'));
  const mutations = r.int(0, 3);
  for (let k = 0; k < mutations; k++) {
    const at = r.int(d.bom ? 1 : 0, chars.length);
    if (r.chance(0.25) && at < chars.length) chars.splice(at, 1);
    else chars.splice(at, 0, r.pick(INSERTS).replaceAll('DELIM', d.delimiter));
  }
  return { text: chars.join(''), delimiter: d.delimiter, width: table[0]!.length };
}

/** One mutated file: compared with the reference where it is clean, invariants where not. */
async function mutatedCase(seed: number, note: (s: string) => void = () => {}): Promise<void> {
  const r = rand(seed);
  const { text, delimiter, width } = mutatedDoc(r);
  const bytes = Buffer.from(text, 'utf8');
  const cutter = randomCutter(r);
  const ref = referenceParse(text, delimiter);
  // Often a record size limit that some lines pass: a little under the length of one of them.
  const headerLength = Buffer.byteLength(text.split('\n')[0]!);
  const someLine = Buffer.byteLength(r.pick(text.split('\n')));
  const maxRecordBytes = r.chance(0.4) ? Math.max(headerLength, someLine - r.int(1, 4)) : undefined;
  note(`(${JSON.stringify(delimiter)}, ${cutter.name}, maxRecordBytes ${maxRecordBytes}, file ${JSON.stringify(text)})`);
  const path = await writeDoc(bytes);
  // The records the README's rules make of the file, broken or not.
  const expected = referenceRecover(text, delimiter, maxRecordBytes ?? 1024 * 1024);
  let read: Read;
  try {
    read = await readSource(path, cutter.cut, { delimiter, maxRecordBytes });
  } catch (err) {
    // Only a file whose header row cannot be read is refused whole.
    expect((err as Error).message).toMatch(/header row|is empty/);
    expect(expected).toBeUndefined();
    return;
  }
  expect({
    header: read.header,
    items: read.items.map((i) => ({ outcome: i.kind === 'row' ? { cells: i.cells } : { code: i.code }, line: i.line, endLine: i.position.line - 1 })),
  }).toEqual(expected);

  // The field splitter agrees with the reference on every line of the file taken as a record.
  const split = fieldSplitter(delimiter);
  for (const l of text.split('\n')) {
    let fields: string[] | undefined;
    try {
      fields = split(l);
    } catch {
      fields = undefined;
    }
    expect(fields, JSON.stringify(l)).toEqual(referenceSplit(l, delimiter));
  }

  // The chunking changes nothing.
  const whole = await readSource(path, (b) => [b.length], { delimiter, maxRecordBytes });
  expect(read.items.map(view)).toEqual(whole.items.map(view));

  if ('records' in ref && ref.records.length > 0 && ref.records.every((rec) => rec.cells.length === width)) {
    // A clean file: the same rows as the reference, none rejected but those over the size limit.
    cleanFiles += 1;
    expect(read.header).toEqual(ref.records[0]!.cells);
    expect(read.items.map((i) => ({ row: i.kind === 'row' ? i.cells : i.code, line: i.line, endLine: i.position.line - 1 }))).toEqual(
      ref.records.slice(1).map((rec) => ({
        row: maxRecordBytes !== undefined && rec.length > maxRecordBytes ? 'record-too-large' : rec.cells,
        line: rec.line,
        endLine: rec.endLine,
      })),
    );
  }

  // No line is lost or read twice: records follow one another, each on the lines after the last.
  const lines = text.split('\n');
  // An empty line: nothing, or only a CR, before its terminator (or a byte order mark at the start).
  const blank = (l: string) => ['', '\r', '\uFEFF'].includes(l.replace(/\r$/, ''));
  let nextLine = 1;
  let nextOffset = 0;
  for (const item of read.items) {
    expect(item.line).toBeGreaterThanOrEqual(nextLine);
    if (nextLine > 1) for (let l = nextLine; l < item.line; l++) expect(blank(lines[l - 1]!), `line ${l} is skipped`).toBe(true);
    expect(item.position.line).toBeGreaterThan(item.line);
    expect(item.position.offset).toBeGreaterThan(nextOffset);
    expect(bytes[item.position.offset - 1] === 0x0a || item.position.offset === bytes.length, 'a record ends at a line end').toBe(true);
    nextLine = item.position.line;
    nextOffset = item.position.offset;
  }
  const tail = bytes.subarray(nextOffset).toString('utf8');
  if (read.items.length > 0) expect(tail.split('\n').every(blank), `text after the last record: ${JSON.stringify(tail)}`).toBe(true);

  // Reading on from any record's checkpoint gives the same records as the read straight through.
  if (read.items.length > 1) {
    const k = r.int(0, read.items.length - 2);
    const rest = await readSource(path, randomCutter(r).cut, { delimiter, maxRecordBytes, start: read.items[k]!.position });
    expect(rest.items.map(view)).toEqual(read.items.slice(k + 1).map(view));
  }
}

/** More cases with CSV_FUZZ_SCALE=n (n times as many seeds), for a longer search. */
const SCALE = Number(process.env['CSV_FUZZ_SCALE'] ?? 1);
let cleanFiles = 0;

describe('CSV read back byte for byte (seeded fuzzing)', () => {
  it(
    'reads random tables written as spreadsheets write them back exactly, however the bytes are chunked',
    async () => {
      await forSeeds(1, 250 * SCALE, fuzzCase);
    },
    60_000 * SCALE,
  );

  it(
    'agrees with the reference parser on randomly broken files where they are clean, and loses no line of any',
    async () => {
      await forSeeds(10_000_000, 400 * SCALE, mutatedCase);
      // A good share of the files stay clean, so the comparison with the reference parser is made.
      expect(cleanFiles).toBeGreaterThan(60 * SCALE);
    },
    60_000 * SCALE,
  );
});

describe('records over the size limit', () => {
  const whole: Cutter = (bytes) => [bytes.length];

  it('gives back only the line of a never-closed quote when that line is itself over the limit, and reads the rows after it', async () => {
    const long = `1;"${'x'.repeat(30)}`;
    const text = `id;a;b\n${long}\n2;a;b\n3;"${'y'.repeat(30)}\n4;c;d\n`;
    const path = await writeDoc(Buffer.from(text));
    for (const cut of [whole, oneByte, awkward]) {
      const read = await readSource(path, cut, { delimiter: ';', maxRecordBytes: 20 });
      expect(read.items.map((i) => (i.kind === 'row' ? `${i.line} ${i.cells!.join('|')}` : `${i.line} ${i.code} ${i.raw}`))).toEqual([
        `2 record-too-large ${long}`,
        '3 2|a|b',
        `4 record-too-large 3;"${'y'.repeat(30)}`,
        '5 4|c|d',
      ]);
      expect(read.items.map((i) => i.position)).toEqual([
        { records: 1, offset: 8 + long.length, line: 3 },
        { records: 2, offset: 14 + long.length, line: 4 },
        { records: 3, offset: 48 + long.length, line: 5 },
        { records: 4, offset: text.length, line: 6 },
      ]);
      expect(read.items[0]!.kind === 'reject' && read.items[0]!.reason).toContain(`the record at byte offset 7 is ${long.length} bytes long`);
    }
  });

  it('keeps the same first bytes of a record over the limit for the rejects file, however the input is chunked', async () => {
    const short = `2;${'s'.repeat(60)}`;
    const long = `3;${'l'.repeat(2000)}`;
    const input = Buffer.from(`a;b\n${short}\r\n${long}\nc;d\n`);
    for (const cut of [whole, oneByte, randomSizes(rand(7), 9)]) {
      const frames = await frameAll(input, cut, ';', 20);
      expect(frames.map((f) => ({ text: f.bytes.toString(), tooLarge: f.tooLarge }))).toEqual([
        { text: 'a;b', tooLarge: undefined },
        { text: short, tooLarge: { length: short.length, offset: 4 } },
        { text: long.slice(0, 1024), tooLarge: { length: long.length, offset: 6 + short.length } },
        { text: 'c;d', tooLarge: undefined },
      ]);
    }
  });
});

describe('through the CLI', () => {
  const sandbox = useSandbox(unlimited());

  it('writes the input columns of a fuzzed file to the output byte for byte, every row in order', async () => {
    const r = rand(424_242);
    const names = ['id', 'strasse', 'plz', 'ort', 'note'];
    const rows = Array.from({ length: 60 }, (_, k) => [String(k + 1), ...Array.from({ length: 4 }, () => randomValue(r))]);
    const d: Dialect = { delimiter: ';', eol: '\r\n', bom: true, finalEol: false, quoting: 'needed', blankLines: 0.1 };
    const { bytes } = encodeTable([names, ...rows], d, r);
    const input = await writeDoc(bytes);
    const output = join(dir, 'fuzz-cli.out.csv');
    const run = await runCli(
      [
        'validate',
        '--input',
        input,
        '--output',
        output,
        '--delimiter',
        ';',
        '--country',
        'DE',
        '--map',
        'street=strasse,postalCode=plz,locality=ort',
        '--store',
        'off',
        '--max-failed',
        '1',
      ],
      sandbox.env(),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run).rows).toBe(rows.length);
    // Read with the reference parser, not dq-csv's own reader: the output is clean CSV.
    const written = referenceParse(await readFile(output, 'utf8'), ';');
    if (!('records' in written)) throw new Error(written.error);
    expect(written.records[0]!.cells.slice(0, 5)).toEqual(names);
    expect(written.records.slice(1).map((rec) => rec.cells.slice(0, 5))).toEqual(rows);
  });
});
