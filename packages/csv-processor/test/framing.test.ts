import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordMapper } from '../src/mapping.js';
import { processFile } from '../src/run.js';
import { fieldSplitter } from '../src/source/csv-fields.js';
import { frameRecords, type RawRecord } from '../src/source/framer.js';
import { openSource, type SourceItem, type SourceOptions } from '../src/source/index.js';
import { roundShare } from '../src/summary.js';
import { readCsv, tempDir } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => void ({ dir, cleanup } = await tempDir()));
afterAll(async () => cleanup());

const HEADER = 'id;strasse;nr;plz;ort\n';
const row = (i: number, street = 'Weg') => `${i};${street};1;10115;Berlin\n`;

/** Every item a source gives for `content` as a CSV (`;`) or other input. */
async function items(name: string, content: string | Buffer, options: Partial<SourceOptions> = {}): Promise<SourceItem[]> {
  const path = join(dir, name);
  await writeFile(path, content);
  const source = await openSource({ path, format: 'csv', delimiter: ';', ...options });
  const all: SourceItem[] = [];
  for await (const item of source.items) all.push(item);
  return all;
}

/** Rows as their cells, rejects as `line code`. */
const summarise = (all: SourceItem[]) => all.map((i) => (i.kind === 'row' ? (i.cells ?? i.object) : `${i.line} ${i.code}`));

async function frame(chunks: Buffer[], maxRecordBytes: number): Promise<RawRecord[]> {
  const records: RawRecord[] = [];
  for await (const r of frameRecords(
    (async function* () {
      yield* chunks;
    })(),
    { quotes: true, delimiter: ';', maxRecordBytes },
  ))
    records.push(r);
  return records;
}

describe('quotes in CSV fields', () => {
  it('keeps a quote inside an unquoted field (inch marks) as a literal character, costing no row', async () => {
    const text = HEADER + row(1, 'Monitor 24" Zoll') + row(2) + row(3) + row(4, 'Monitor 27" Zoll') + row(5, 'Das "Haus" am See');
    expect(summarise(await items('inch.csv', text))).toEqual([
      ['1', 'Monitor 24" Zoll', '1', '10115', 'Berlin'],
      ['2', 'Weg', '1', '10115', 'Berlin'],
      ['3', 'Weg', '1', '10115', 'Berlin'],
      ['4', 'Monitor 27" Zoll', '1', '10115', 'Berlin'],
      ['5', 'Das "Haus" am See', '1', '10115', 'Berlin'],
    ]);
  });

  it('rejects only the line of a quote never closed, even when a quoted multi-line field follows', async () => {
    const text = HEADER + row(1, '"oops') + row(2) + row(3, '"multi\nline"') + row(4);
    const all = await items('unclosed-then-quoted.csv', text);
    expect(summarise(all)).toEqual([
      '2 broken-quoting',
      ['2', 'Weg', '1', '10115', 'Berlin'],
      ['3', 'multi\nline', '1', '10115', 'Berlin'],
      ['4', 'Weg', '1', '10115', 'Berlin'],
    ]);
    expect(all[0]!.kind === 'reject' && all[0]!.reason).toContain('is not closed on it');
  });

  it('keeps values byte-exact: spaces of unquoted fields kept, text after a closing quote rejected', async () => {
    const split = fieldSplitter(';');
    expect(split('  ;"Weg";1')).toEqual(['  ', 'Weg', '1']);
    expect(split(' "ab" ;"a""b";""')).toEqual([' "ab" ', 'a"b', '']);
    expect(split('\u00a0"Am Markt";x;')).toEqual(['\u00a0"Am Markt"', 'x', '']);
    expect(() => split('"ab" ;x')).toThrow('goes on after its closing quote');
    expect(() => split('"a" x;y')).toThrow('goes on after its closing quote');
    expect(() => split('a\rb;c')).toThrow('bare carriage return');
    const text = HEADER + '  ;Weg "Nord";1;10115;Berlin\n' + '2;"ab" ;1;10115;Berlin\n' + '3; "Am Markt" ;1;10115;Berlin\n';
    expect(summarise(await items('spaces.csv', text))).toEqual([
      ['  ', 'Weg "Nord"', '1', '10115', 'Berlin'],
      '3 broken-quoting',
      ['3', ' "Am Markt" ', '1', '10115', 'Berlin'],
    ]);
  });
});

describe('the record size limit', () => {
  it('rejects a quoted multi-line field over the limit whole, without phantom rows from its lines', async () => {
    const lines = Array.from({ length: 200 }, (_, k) => `note line ${k}`);
    lines[100] = '99;Phantomweg;1;10115;Berlin';
    const text = HEADER + row(1) + `2;"${lines.join('\n')}";1;10115;Berlin\n` + row(3);
    const all = await items('big-field.csv', text, { maxRecordBytes: 1000 });
    expect(summarise(all)).toEqual([['1', 'Weg', '1', '10115', 'Berlin'], '3 record-too-large', ['3', 'Weg', '1', '10115', 'Berlin']]);
    expect(all[1]!.kind === 'reject' && all[1]!.reason).toContain('(lines 3-202)');
  });

  it('gives back the line of a never-closed quote alone, however far the next quote is', async () => {
    // Over 256 KiB, so the input comes in several read chunks and the open quote passes the limit
    // before its record ends. The next quote closes nothing real: its line and the rows before it stay rows.
    const filler = Array.from({ length: 15_000 }, (_, k) => row(k + 10)).join('');
    const text = HEADER + row(1, '"oops') + filler + row(2, 'Monitor "27" Zoll') + row(3, '"x"');
    const all = await items('far-quote.csv', text, { maxRecordBytes: 1000 });
    expect(all.filter((i) => i.kind === 'reject').map((i) => `${i.line} ${i.code}`)).toEqual(['2 broken-quoting']);
    expect(all.filter((i) => i.kind === 'row').map((i) => i.cells![0])).toEqual([...Array.from({ length: 15_000 }, (_, k) => `${k + 10}`), '2', '3']);
  });

  it('measures a record without its line terminator, wherever the read chunks end', async () => {
    const max = 40;
    const fits = 'x'.repeat(max);
    const over = 'y'.repeat(max + 1);
    const input = Buffer.from(`a\r\n${fits}\r\n${over}\r\n"${'z'.repeat(max)}"\nb\n`);
    const expected = [
      { text: 'a', tooLarge: undefined },
      { text: fits, tooLarge: undefined },
      { text: over.slice(0, 1024), tooLarge: max + 1 },
      { text: `"${'z'.repeat(max)}"`, tooLarge: max + 2 },
      { text: 'b', tooLarge: undefined },
    ];
    // Every place a chunk boundary can fall, and one byte per chunk.
    const splits = [...Array.from({ length: input.length + 1 }, (_, i) => [input.subarray(0, i), input.subarray(i)]), [...input].map((b) => Buffer.from([b]))];
    for (const chunks of splits) {
      const records = await frame(chunks, max);
      expect(records.map((r) => ({ text: r.bytes.toString(), tooLarge: r.tooLarge?.length }))).toEqual(expected);
    }
  });
});

describe('JSON input', () => {
  it('rejects an array element holding bytes that are not UTF-8, as NDJSON and CSV do', async () => {
    const bad = Buffer.from('{"id":1,"strasse":"Stra\xdfe","ort":"Berlin"}', 'latin1');
    const good = Buffer.from('{"id":2,"strasse":"Straße","ort":"Berlin"}');
    const all = await items('bad.json', Buffer.concat([Buffer.from('['), bad, Buffer.from(','), good, Buffer.from(']')]), { format: 'json' });
    expect(summarise(all)).toEqual(['1 undecodable-bytes', { id: 2, strasse: 'Straße', ort: 'Berlin' }]);
    expect(all[0]!.kind === 'reject' && all[0]!.raw).toBe('{"id":1,"strasse":"Stra\uFFFDe","ort":"Berlin"}');
  });

  it('skips a first line that holds only the byte order mark, as an empty line', async () => {
    const all = await items('bom-blank.ndjson', '\uFEFF\n{"id":1}\n', { format: 'ndjson' });
    expect(summarise(all)).toEqual([{ id: 1 }]);
  });

  it('skips a first line that holds only the byte order mark and a CR, in CSV as in NDJSON: the header is the line after it', async () => {
    const csv = await items('bom-cr.csv', `\uFEFF\r\r\n${HEADER}${row(1)}`);
    expect(csv.map((i) => i.kind)).toEqual(['row']);
    expect(csv[0]).toMatchObject({ kind: 'row', line: 3 });
    const ndjson = await items('bom-cr.ndjson', '\uFEFF\r\r\n{"id":1}\n', { format: 'ndjson' });
    expect(summarise(ndjson)).toEqual([{ id: 1 }]);
  });

  it('rejects an object with a key written twice, in NDJSON and in an array, naming the key; a string holding ":" is no key', async () => {
    // JSON keeps only the last value of a key written twice: the first would be lost from the output.
    const lines = ['{"id":1,"strasse":"Weg","strasse":"Dup"}', '{"id":2,"note":"a\\":b","x":{"a":1}}', '{"id":3,"x":[{"a":1,"a":2}]}'];
    const ndjson = await items('twice.ndjson', lines.join('\n') + '\n', { format: 'ndjson' });
    expect(summarise(ndjson)).toEqual(['1 duplicate-key', { id: 2, note: 'a":b', x: { a: 1 } }, '3 duplicate-key']);
    expect(ndjson[0]!.kind === 'reject' && ndjson[0]!.reason).toContain('the key "strasse" is written twice in one object');
    expect(ndjson[0]!.kind === 'reject' && ndjson[0]!.raw).toBe(lines[0]);
    const json = await items('twice.json', `[${lines.join(',')}]`, { format: 'json' });
    expect(summarise(json)).toEqual(['1 duplicate-key', { id: 2, note: 'a":b', x: { a: 1 } }, '3 duplicate-key']);
    expect(json[2]!.kind === 'reject' && json[2]!.reason).toContain('array element 3: the key "a" is written twice');
  });

  it('keeps a "__proto__" key as a key, and maps no field from an inherited property', async () => {
    const element = '{"id":1,"__proto__":{"street":"Hauptstraße","plz":"10115"}}';
    const all = await items('proto.json', `[${element}]`, { format: 'json' });
    const first = all[0]!;
    expect(first.kind).toBe('row');
    if (first.kind !== 'row') return;
    expect(Object.keys(first.object!)).toEqual(['id', '__proto__']);
    expect(Object.getPrototypeOf(first.object)).toBe(Object.prototype);
    const record = recordMapper(
      { street: 'street', postalCode: 'plz' },
      undefined,
    )({ ...first, object: Object.create({ street: 'Erbweg' }) as Record<string, unknown> });
    expect(record).toEqual({ street: undefined, postalCode: undefined });
  });
});

describe('the summary', () => {
  it('never prints a failed share that is not 0 as 0', () => {
    expect(roundShare(1 / 100_000, 4)).toBe(0.00001);
    expect(roundShare(5000 / 100_000, 4)).toBe(0.05);
    expect(roundShare(0, 4)).toBe(0);
  });
});

describe('row accounting through the CLI', () => {
  let sandbox: Sandbox;
  beforeAll(async () => void (sandbox = await startSandbox({ port: 0 })));
  afterAll(async () => sandbox.close());

  it('accounts for every input row when a product list has inch marks and a quote is never closed', async () => {
    const input = join(dir, 'products.csv');
    const rows = Array.from({ length: 300 }, (_, k) => row(k + 1, k % 7 === 0 ? `Monitor ${20 + (k % 10)}" Zoll` : 'Weg'));
    rows[150] = row(151, '"oops');
    await writeFile(input, HEADER + rows.join(''));
    const summary = await processFile({
      input,
      output: join(dir, 'products.out.csv'),
      delimiter: ';',
      country: 'DE',
      map: { street: 'strasse', houseNumber: 'nr', postalCode: 'plz', locality: 'ort' },
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      maxFailed: 0.01,
      engine: { rateLimits: { batch: 0 }, store: 'off' },
    });
    const output = await readCsv(summary.paths.output, { delimiter: ';' });
    const rejects = await readCsv(summary.paths.rejects);
    // input rows = output rows + rejected rows, and each value as it was in the input
    expect(output.rows.length + rejects.rows.length).toBe(300);
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([['152', 'broken-quoting']]);
    expect(output.rows.map((r) => r[1])).toEqual(rows.filter((_, k) => k !== 150).map((r) => r.split(';')[1]));
    expect(summary.totals.rows).toBe(299);
  });
});
