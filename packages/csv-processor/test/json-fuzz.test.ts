import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mulberry32 } from '@dq/test-support/random';
import { openSource } from '../src/source/index.js';
import { JsonNumber, parseJson, stringifyJson } from '../src/source/lossless-json.js';
import type { InputFormat, SourceItem, SourcePosition } from '../src/source/types.js';

/**
 * Differential fuzzing of the JSON and NDJSON sources: random records (numbers a double would not
 * give back, every string escape including lone surrogates, multi-byte text, bytes that are not
 * UTF-8 now and then, keys such as __proto__, duplicate keys, nesting) are written as a JSON array
 * and as NDJSON with random layout (whitespace, CRLF, blank lines, a byte order mark, a final line
 * end or none), read back through the sources with the file cut into random chunks (down to one
 * byte: boundaries inside multi-byte characters, escapes and numbers), and compared with what the
 * text says: every value as written and as the sink writes it back, every record once and in
 * order (a row, or a reject with its reason), with its line, element number, offsets and resumed
 * reads. JSON arrays with a syntax error must name the byte offset and line of the wrong
 * character. The seed is printed with any failure; FUZZ_SEED=<seed> runs that case again.
 */

/** How the sources' input is cut: the size of each next chunk, or as the file is read (`AS_READ`). */
const cut = vi.hoisted(() => {
  const AS_READ = (): number => 0;
  return { AS_READ, next: AS_READ };
});

vi.mock('../src/source/input-bytes.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/source/input-bytes.js')>();
  return {
    ...actual,
    inputBytes: async (...args: Parameters<typeof actual.inputBytes>) => {
      const input = await actual.inputBytes(...args);
      const size = cut.next;
      return { ...input, stream: (start?: number) => (size === cut.AS_READ ? input.stream(start) : rechunked(input.stream(start), size)) };
    },
  };
});

/** `stream` delivered in chunks of the sizes `size` gives, each chunk as its own buffer. */
function rechunked(stream: Readable, size: () => number): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    let pending = Buffer.alloc(0);
    let want = size();
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= want) {
          yield Buffer.from(pending.subarray(0, want));
          pending = pending.subarray(want);
          want = size();
        }
      }
      if (pending.length > 0) yield pending;
    } finally {
      stream.destroy();
    }
  }
  // Object mode: a reader gets each buffer as it is, not joined with the ones buffered after it.
  return Readable.from(chunks(), { objectMode: true });
}

// ---------------------------------------------------------------------------------------------
// Random generation (seeded).

type Rng = () => number;

const int = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;

/** A JSON value as text, with what it must read as. */
type Ast =
  | { readonly t: 'num'; readonly text: string }
  | { readonly t: 'str'; readonly text: string; readonly value: string }
  | { readonly t: 'lit'; readonly text: 'true' | 'false' | 'null' }
  | { readonly t: 'obj'; readonly entries: readonly (readonly [Ast & { t: 'str' }, Ast])[] }
  | { readonly t: 'arr'; readonly items: readonly Ast[] };

const NUMBERS = [
  '12345678901234567890',
  '-12345678901234567890',
  '9007199254740993',
  '9007199254740992',
  '1.10',
  '1.0',
  '1e3',
  '1E3',
  '1E+3',
  '1e-3',
  '-0',
  '-0.0',
  '-0e0',
  '0.1e-7',
  '0',
  '1',
  '-1',
  '0.5',
  '100',
  '1.5E2',
  '123456789012345678901234567890.000000000000000000001',
  '1e400',
  '-1e400',
  '5e-324',
  '2.5e-400',
  '0.30000000000000004',
  '1.7976931348623157e308',
  '0e0',
  '1000000000000000000000',
  '100000000000000000000',
  '999999999999999',
  '1234567890123456',
];

function numberText(rng: Rng): string {
  if (rng() < 0.5) return pick(rng, NUMBERS);
  const digits = (n: number) => Array.from({ length: n }, () => String(int(rng, 0, 9))).join('');
  let text = rng() < 0.3 ? '-' : '';
  text += rng() < 0.2 ? '0' : String(int(rng, 1, 9)) + digits(int(rng, 0, pick(rng, [3, 15, 30])));
  if (rng() < 0.4) text += '.' + digits(int(rng, 1, 20));
  if (rng() < 0.3) text += pick(rng, ['e', 'E']) + pick(rng, ['', '+', '-']) + digits(int(rng, 1, 3));
  return text;
}

const hex4 = (rng: Rng, code: number): string => {
  const h = code.toString(16).padStart(4, '0');
  return rng() < 0.5 ? h : h.toUpperCase();
};

/**
 * Whether the strings generated now may hold bytes that are not valid UTF-8: {@link BAD} stands for
 * three such bytes until the file is written ({@link bytesOf}).
 */
const gen = { badBytes: false };
const BAD = '\ue0ff';
const BAD_BYTES = [
  [0xff, 0xff, 0xff],
  [0xed, 0xa0, 0x80], // an encoded surrogate
  [0xc0, 0xaf, 0xc1], // overlong forms
  [0x80, 0xbf, 0x80], // continuation bytes alone
  [0xf0, 0x9f, 0x98], // a 4-byte sequence cut short
  [0xe2, 0x82, 0x41], // a 3-byte sequence cut short, then "A"
];

/** The file's bytes: `text` in UTF-8, each {@link BAD} replaced with bytes that are not UTF-8. */
function bytesOf(text: string, rng: Rng): Buffer {
  const marker = Buffer.from(BAD);
  const bytes = Buffer.from(text);
  for (let i = bytes.indexOf(marker); i !== -1; i = bytes.indexOf(marker, i + 3)) Buffer.from(pick(rng, BAD_BYTES)).copy(bytes, i);
  return bytes;
}

/** One piece of a string literal: its text in the file and the characters it stands for. */
function stringPiece(rng: Rng): [string, string] {
  if (gen.badBytes && rng() < 0.04) return [BAD, BAD];
  switch (int(rng, 0, 9)) {
    case 0:
      return pick(rng, [
        ['\\"', '"'],
        ['\\\\', '\\'],
        ['\\/', '/'],
        ['\\b', '\b'],
        ['\\f', '\f'],
        ['\\n', '\n'],
        ['\\r', '\r'],
        ['\\t', '\t'],
      ] as const) as [string, string];
    case 1: {
      // \uXXXX of any BMP character that is not a surrogate (control characters included).
      let code = int(rng, 0, 0xffff);
      if (code >= 0xd800 && code <= 0xdfff) code = int(rng, 0, 0x7f);
      return [`\\u${hex4(rng, code)}`, String.fromCharCode(code)];
    }
    case 2: {
      // A surrogate pair as two escapes.
      const cp = int(rng, 0x10000, 0x10ffff);
      const s = String.fromCodePoint(cp);
      return [`\\u${hex4(rng, s.charCodeAt(0))}\\u${hex4(rng, s.charCodeAt(1))}`, s];
    }
    case 3: {
      // A lone surrogate: JSON.parse accepts it, and so does dq-csv. (In a JSON array with bytes
      // that are not UTF-8, U+DC80-U+DCFF stand for such bytes: left out then.)
      let code = rng() < 0.5 ? int(rng, 0xd800, 0xdbff) : int(rng, 0xdc00, 0xdfff);
      if (gen.badBytes && code >= 0xdc80 && code <= 0xdcff) code += 0x100;
      return [`\\u${hex4(rng, code)}`, String.fromCharCode(code)];
    }
    case 4:
    case 5: {
      const raw = pick(rng, ['é', 'ß', '€', '中文', '😀', '𝄞', '\u2028', '\u2029', '\u00a0', '\u007f', '\ufeff', 'Ω', 'ü']);
      return [raw, raw];
    }
    default: {
      const raw = pick(rng, ['a', 'Hauptstraße 5', ' ', 'x', '0', '1.10', '-0', '{', '}', '[', ']', ',', ':', "'", 'true', '12345678901234567890']);
      return [raw, raw];
    }
  }
}

function stringAst(rng: Rng): Ast & { t: 'str' } {
  let text = '';
  let value = '';
  for (let n = int(rng, 0, 6); n > 0; n--) {
    const [t, v] = stringPiece(rng);
    text += t;
    value += v;
  }
  return { t: 'str', text: `"${text}"`, value };
}

const KEYS = [
  'id',
  'name',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'prototype',
  '',
  // Keys JavaScript lists first, in ascending order ("0" to "4294967294"), and some it does not.
  '1',
  '0',
  '42',
  '10',
  '2',
  '4294967294',
  '01',
  '-1',
  '1.5',
  '4294967295',
  '1e3',
  'ключ',
  'a"b',
  'dq',
];

function keyAst(rng: Rng): Ast & { t: 'str' } {
  if (rng() < 0.3) return stringAst(rng);
  const key = pick(rng, KEYS);
  // The same key written with an escape now and then: the same key all the same.
  if (key.length > 0 && rng() < 0.2) {
    const code = key.charCodeAt(0);
    return { t: 'str', text: `"\\u${hex4(rng, code)}${JSON.stringify(key).slice(2)}`, value: key };
  }
  return { t: 'str', text: JSON.stringify(key), value: key };
}

function valueAst(rng: Rng, depth: number): Ast {
  const r = rng();
  if (depth < 3 && r < 0.12) return objectAst(rng, depth + 1);
  if (depth < 3 && r < 0.22) return { t: 'arr', items: Array.from({ length: int(rng, 0, 4) }, () => valueAst(rng, depth + 1)) };
  if (r < 0.55) return { t: 'num', text: numberText(rng) };
  if (r < 0.9) return stringAst(rng);
  return { t: 'lit', text: pick(rng, ['true', 'false', 'null'] as const) };
}

function objectAst(rng: Rng, depth: number): Ast & { t: 'obj' } {
  const entries: [Ast & { t: 'str' }, Ast][] = [];
  for (let n = int(rng, 0, 6); n > 0; n--) {
    // Now and then a key written twice (the documented rule: the last value, at the first place).
    const key = entries.length > 0 && rng() < 0.15 ? pick(rng, entries)[0] : keyAst(rng);
    entries.push([key, valueAst(rng, depth)]);
  }
  return { t: 'obj', entries };
}

/** Keys JavaScript lists first (array indices), keys it leaves where they are, and one of each twice. */
const ORDER_KEYS = ['0', '1', '2', '9', '10', '42', '100', '4294967294', '4294967295', '01', '-1', '1.5', 'b', 'a', 'name', '__proto__'];

/**
 * An object for the member order: mostly keys such as "2" and "10", objects nested in objects and
 * arrays. `plain`: only numbers and strings a double and JSON.parse give back as written.
 */
function orderAst(rng: Rng, depth: number, plain: boolean): Ast & { t: 'obj' } {
  const entries: [Ast & { t: 'str' }, Ast][] = [];
  for (let n = int(rng, 0, 7); n > 0; n--) {
    let key: Ast & { t: 'str' };
    if (entries.length > 0 && rng() < 0.1) key = pick(rng, entries)[0];
    else {
      const k = pick(rng, ORDER_KEYS);
      // Now and then written with an escape (\u0031 for "1"): the same key.
      key =
        rng() < 0.15
          ? { t: 'str', text: `"\\u${hex4(rng, k.charCodeAt(0))}${JSON.stringify(k).slice(2)}`, value: k }
          : { t: 'str', text: JSON.stringify(k), value: k };
    }
    const r = rng();
    let value: Ast;
    if (depth < 4 && r < 0.25) value = orderAst(rng, depth + 1, plain);
    else if (depth < 4 && r < 0.35) value = { t: 'arr', items: [orderAst(rng, depth + 1, plain), { t: 'lit', text: 'null' }] };
    else if (r < 0.7) value = { t: 'num', text: plain ? pick(rng, ['0', '1', '42', '-7', '100']) : numberText(rng) };
    else if (plain) {
      const v = pick(rng, ['x', 'Berlin', 'a b', '', '"2":']);
      value = { t: 'str', text: JSON.stringify(v), value: v };
    } else value = stringAst(rng);
    entries.push([key, value]);
  }
  return { t: 'obj', entries };
}

/** Writes `ast` with whitespace `ws()` between its tokens. */
function write(ast: Ast, ws: () => string): string {
  switch (ast.t) {
    case 'num':
    case 'str':
    case 'lit':
      return ast.text;
    case 'arr':
      return ast.items.length === 0 ? `[${ws()}]` : `[${ws()}${ast.items.map((v) => write(v, ws)).join(`${ws()},${ws()}`)}${ws()}]`;
    case 'obj':
      return ast.entries.length === 0
        ? `{${ws()}}`
        : `{${ws()}${ast.entries.map(([k, v]) => `${k.text}${ws()}:${ws()}${write(v, ws)}`).join(`${ws()},${ws()}`)}${ws()}}`;
  }
}

/**
 * What a sink writes for `ast` (compact, as stringifyJson writes): numbers exactly as written,
 * strings and keys as JSON.stringify writes their characters, and every object's members in the
 * order they are written (keys such as "2" and "10" included, which JavaScript would list first),
 * a key written twice once, with its last value at its first place.
 */
function expectedText(ast: Ast): string {
  switch (ast.t) {
    case 'num':
    case 'lit':
      return ast.text;
    case 'str':
      return JSON.stringify(ast.value);
    case 'arr':
      return `[${ast.items.map(expectedText).join(',')}]`;
    case 'obj': {
      // A Map lists its keys in the order they were first set, whatever they look like.
      const members = new Map<string, string>();
      for (const [k, v] of ast.entries) members.set(k.value, expectedText(v));
      return `{${[...members].map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
    }
  }
}

/** Whitespace between tokens: none mostly; `newlines` allows LF and CRLF (not within an NDJSON line). */
function spacer(rng: Rng, newlines: boolean): () => string {
  const kinds = newlines ? [' ', '\t', '\n', '\r\n', '  \n\t', '\r'] : [' ', '\t', '  ', ' \t '];
  const often = rng() < 0.5 ? 0.1 : 0.5;
  return () => (rng() < often ? pick(rng, kinds) : '');
}

/** A chunk size now and then one byte, now and then larger. */
function chunking(rng: Rng): () => number {
  const mode = int(rng, 0, 3);
  if (mode === 0) return () => 1;
  if (mode === 1) return () => int(rng, 1, 7);
  if (mode === 2) return () => int(rng, 1, 64);
  return () => Infinity;
}

// ---------------------------------------------------------------------------------------------

const BOM = '\ufeff';
let dir: string;
let fileNo = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-json-fuzz-'));
});
afterAll(async () => {
  cut.next = cut.AS_READ;
  await rm(dir, { recursive: true, force: true });
});

async function file(text: string | Buffer, format: InputFormat): Promise<string> {
  const path = join(dir, `in-${fileNo++}.${format}`);
  await writeFile(path, text);
  return path;
}

/** Every item the source gives for `path`, read in chunks of the sizes `sizes` gives. */
async function readAll(path: string, format: InputFormat, sizes: () => number, start?: SourcePosition): Promise<SourceItem[]> {
  cut.next = sizes;
  try {
    const source = await openSource({ path, format, ...(start ? { start } : {}) });
    const items: SourceItem[] = [];
    for await (const item of source.items) items.push(item);
    return items;
  } finally {
    cut.next = cut.AS_READ;
  }
}

/** The items `path` gives before it fails, and its error (undefined when it does not). */
async function readToError(path: string, format: InputFormat, sizes: () => number): Promise<{ items: SourceItem[]; error?: Error }> {
  cut.next = sizes;
  const items: SourceItem[] = [];
  try {
    const source = await openSource({ path, format });
    for await (const item of source.items) items.push(item);
    return { items };
  } catch (error) {
    return { items, error: error as Error };
  } finally {
    cut.next = cut.AS_READ;
  }
}

/** What the sink writes for a row's object (it copies the object before adding its results). */
const written = (item: SourceItem): string => (item.kind === 'row' ? stringifyJson({ ...item.object }) : `reject ${item.code}: ${item.reason}`);

const seeds = (count: number): number[] => {
  const fixed = process.env['FUZZ_SEED'];
  if (fixed) return [Number(fixed)];
  const base = (Date.now() ^ (Math.random() * 0x7fffffff)) >>> 0;
  return Array.from({ length: count }, (_, i) => (base + i * 7919) >>> 0);
};

/** What the source gives for a record, as {@link written} shows it. */
function expectedItem(ast: Ast): unknown {
  if (write(ast, () => '').includes(BAD)) return expect.stringMatching(/^reject undecodable-bytes/);
  if (ast.t !== 'obj') return expect.stringMatching(/^reject not-an-object/);
  // A key written twice in any of its objects: the first value would be lost (README "rejects").
  return keyTwice(ast) ? expect.stringMatching(/^reject duplicate-key: /) : expectedText(ast);
}

/** Whether an object in `ast` has a key written twice (the same characters, however escaped). */
function keyTwice(ast: Ast): boolean {
  if (ast.t === 'arr') return ast.items.some(keyTwice);
  if (ast.t !== 'obj') return false;
  return new Set(ast.entries.map(([k]) => k.value)).size < ast.entries.length || ast.entries.some(([, v]) => keyTwice(v));
}

/** A record for an input: an object mostly, now and then something else (rejected, not lost). */
function recordAst(rng: Rng): Ast {
  if (rng() < 0.9) return objectAst(rng, 0);
  return valueAst(rng, 2);
}

describe('lossless JSON (parseJson, stringifyJson)', () => {
  it('reads random JSON text back with every number as written and every string as its characters', () => {
    for (const seed of seeds(1)) {
      const rng = mulberry32(seed);
      for (let n = 0; n < 3000; n++) {
        const ast = rng() < 0.7 ? objectAst(rng, 0) : valueAst(rng, 0);
        const text = write(ast, spacer(rng, true));
        let out: string;
        try {
          out = stringifyJson(parseJson(text));
        } catch (err) {
          throw new Error(`seed ${seed}, case ${n}: ${text}: ${String(err)}`, { cause: err });
        }
        expect(out, `seed ${seed}, case ${n}: ${text}`).toBe(expectedText(ast));
        // What is written back reads back the same (a resumed or reviewed output is read again).
        expect(stringifyJson(parseJson(out)), `seed ${seed}, case ${n}: ${text}`).toBe(out);
      }
    }
  });

  it('writes every object member in the order it is read in, at every depth, keys such as "2" and "10" included; members added after them', () => {
    for (const seed of seeds(1)) {
      const rng = mulberry32(seed);
      for (let n = 0; n < 3000; n++) {
        // Half of the cases hold only numbers and strings JSON.parse reads as written (its fast path).
        const ast = orderAst(rng, 0, rng() < 0.5);
        const text = write(ast, spacer(rng, true));
        const at = `seed ${seed} (FUZZ_SEED=${seed}), case ${n}: ${text}`;
        // What the sink does: a copy of the record, the dq members set on it.
        const record = { ...(parseJson(text) as Record<string, unknown>) };
        record['dq_status'] = 'valid';
        record['dq_score'] = 1;
        const members = expectedText(ast).slice(1, -1);
        expect(stringifyJson(record), at).toBe(`{${members}${members === '' ? '' : ','}"dq_status":"valid","dq_score":1}`);
      }
    }
  });

  it('keeps members as written: "b", "2", "name", "10", "1" stay in that order, nested ones too; "01", "-1", "1.5", "4294967295" were never moved', () => {
    const cases = [
      '{"b":1,"2":0,"name":"x","10":true,"1":null}',
      '{"id":7,"nested":{"z":{"3":[{"9":1,"x":2,"0":3}],"a":1},"1":"one"},"0":[]}',
      '{"01":1,"-1":2,"1.5":3,"4294967295":4,"4294967294":5,"4294967293":6}',
      // The same key twice: its last value at its first place; __proto__ a key like any other.
      '{"a":1,"1":"first","__proto__":{"2":0,"b":1},"1":"last","0":0}',
      // A key written with an escape is the same key.
      '{"x":1,"\\u0031":2,"0":3,"\\u00310":4}',
    ];
    const expected = [
      '{"b":1,"2":0,"name":"x","10":true,"1":null,"dq_status":"valid"}',
      '{"id":7,"nested":{"z":{"3":[{"9":1,"x":2,"0":3}],"a":1},"1":"one"},"0":[],"dq_status":"valid"}',
      '{"01":1,"-1":2,"1.5":3,"4294967295":4,"4294967294":5,"4294967293":6,"dq_status":"valid"}',
      '{"a":1,"1":"last","__proto__":{"2":0,"b":1},"0":0,"dq_status":"valid"}',
      '{"x":1,"1":2,"0":3,"10":4,"dq_status":"valid"}',
    ];
    expect(
      cases.map((text) => {
        const record = { ...(parseJson(text) as Record<string, unknown>) };
        record['dq_status'] = 'valid';
        return stringifyJson(record);
      }),
    ).toEqual(expected);
    // Written back, it reads back the same.
    for (const text of expected) expect(stringifyJson(parseJson(text))).toBe(text);
  });

  it('keeps a number whose text a double does not give back as its text, and others as numbers', () => {
    for (const text of NUMBERS) {
      const value = parseJson(`{"n":${text}}`) as { n: unknown };
      if (JSON.stringify(Number(text)) === text) expect(value.n, text).toBe(Number(text));
      else expect(value.n, text).toEqual(new JsonNumber(text));
    }
  });
});

describe('JSON array and NDJSON sources, fed in random chunks', () => {
  it('gives every element of a random JSON array once, in order, as written', async () => {
    for (const seed of seeds(60)) {
      const rng = mulberry32(seed);
      gen.badBytes = rng() < 0.3;
      const records = Array.from({ length: int(rng, 0, 12) }, () => recordAst(rng));
      if (records.length === 0 || records[0]!.t !== 'obj') records.unshift(objectAst(rng, 0));
      gen.badBytes = false;
      const ws = spacer(rng, true);
      const bom = rng() < 0.3 ? BOM : '';
      // Where each element ends in the file, in bytes.
      let text = `${bom}${ws()}[${ws()}`;
      const ends: number[] = [];
      records.forEach((r, i) => {
        if (i > 0) text += `${ws()},${ws()}`;
        text += write(r, ws);
        ends.push(Buffer.byteLength(text));
      });
      text += `${ws()}]${pick(rng, ['', '\n', '\r\n', ' \n\n'])}`;
      const path = await file(bytesOf(text, rng), 'json');
      const size = Buffer.byteLength(text);
      const sizes = chunking(rng);
      const at = `seed ${seed} (FUZZ_SEED=${seed}): ${JSON.stringify(text)}`;
      let items: SourceItem[];
      try {
        items = await readAll(path, 'json', sizes);
      } catch (err) {
        throw new Error(`${at}: ${String(err)}`, { cause: err });
      }
      expect(items.map(written), at).toEqual(records.map(expectedItem));
      items.forEach((item, i) => {
        expect(item.line, at).toBe(i + 1);
        expect(item.position.records, at).toBe(i + 1);
        expect(item.position.line, at).toBe(i + 2);
        // The bytes read so far hold the element, and never more than the file.
        expect(item.position.offset, at).toBeGreaterThanOrEqual(ends[i]!);
        expect(item.position.offset, at).toBeLessThanOrEqual(size);
        if (item.kind === 'reject' && item.code === 'not-an-object') expect(item.raw, at).toBe(expectedText(records[i]!));
      });
      // Resumed after k elements: the rest, numbered as before.
      const k = int(rng, 0, records.length);
      const rest = await readAll(path, 'json', sizes, { records: k, offset: 0, line: k + 1 });
      expect(rest.map(written), at).toEqual(items.slice(k).map(written));
      expect(
        rest.map((item) => item.line),
        at,
      ).toEqual(items.slice(k).map((item) => item.line));
    }
  });

  it('gives every line of a random NDJSON file once, in order, as written, with its line number and offset', async () => {
    for (const seed of seeds(60)) {
      const rng = mulberry32(seed);
      gen.badBytes = rng() < 0.3;
      const ws = spacer(rng, false);
      const eol = rng() < 0.5 ? '\n' : '\r\n';
      const bom = rng() < 0.3 ? BOM : '';
      let text = bom;
      let line = 1;
      // Each record: its line, the byte offset after its line end, and what it must give.
      const expected: { line: number; next: number; ast?: Ast; raw: string }[] = [];
      const count = int(rng, 1, 12);
      for (let i = 0; i < count; i++) {
        while (rng() < 0.2) {
          text += pick(rng, ['', '\r']) + eol; // blank lines are skipped (but counted)
          line += 1;
        }
        const broken = rng() < 0.08;
        const ast = recordAst(rng);
        const body = broken ? `${ws()}{"id": 1,${ws()}` : `${ws()}${write(ast, ws)}${ws()}`;
        const last = i === count - 1 && rng() < 0.5;
        text += body + (last ? '' : eol);
        expected.push({ line, next: Buffer.byteLength(text), ...(broken ? {} : { ast }), raw: body });
        line += 1;
      }
      gen.badBytes = false;
      const path = await file(bytesOf(text, rng), 'ndjson');
      const sizes = chunking(rng);
      const at = `seed ${seed} (FUZZ_SEED=${seed}): ${JSON.stringify(text)}`;
      let items: SourceItem[];
      try {
        items = await readAll(path, 'ndjson', sizes);
      } catch (err) {
        throw new Error(`${at}: ${String(err)}`, { cause: err });
      }
      expect(items.map(written), at).toEqual(
        expected.map(({ ast, raw }) =>
          ast === undefined ? expect.stringMatching(raw.includes(BAD) ? /^reject undecodable-bytes/ : /^reject invalid-json/) : expectedItem(ast),
        ),
      );
      items.forEach((item, i) => {
        const e = expected[i]!;
        expect(item.line, at).toBe(e.line);
        expect(item.position, at).toEqual({ records: i + 1, offset: e.next, line: e.line + 1 });
        if (item.kind === 'reject' && item.code !== 'undecodable-bytes') expect(item.raw, at).toBe(e.raw);
      });
      // Resumed from the position after record k: the rest, with the same lines and positions.
      const k = int(rng, 0, items.length - 1);
      const rest = await readAll(path, 'ndjson', sizes, items[k]!.position);
      expect(
        rest.map((item) => [written(item), item.line, item.position]),
        at,
      ).toEqual(items.slice(k + 1).map((item) => [written(item), item.line, item.position]));
    }
  });
});

/** Wrong values, and where in each the parser must say the error is (its UTF-16 index). */
const WRONG: readonly (readonly [string, number])[] = [
  ['x', 0],
  ['😀', 0],
  ["'a'", 0],
  ['NaN', 0],
  ['undefined', 0],
  ['tru', 0],
  ['.5', 0],
  ['+1', 0],
  ['-x', 1],
  ['1.x', 2],
  ['1e+x', 3],
  ['"\\x"', 1],
  ['"a😀\\u12G4"', 4],
  ['"a\u0001b"', 2],
  ['"€\\', 2],
];

describe('a JSON array with a syntax error, fed in random chunks', () => {
  it('names the byte offset and line of the wrong character, after every element before it', async () => {
    for (const seed of seeds(60)) {
      const rng = mulberry32(seed);
      const ws = spacer(rng, true);
      const good = Array.from({ length: int(rng, 0, 6) }, () => objectAst(rng, 1));
      const [wrong, at] = pick(rng, WRONG);
      let text = `${rng() < 0.3 ? BOM : ''}[${ws()}`;
      for (const r of good) text += `${write(r, ws)}${ws()},${ws()}`;
      const broken = objectAst(rng, 1);
      text += `${write(broken, ws).slice(0, -1)}${broken.entries.length > 0 ? ',' : ''}${ws()}"key"${ws()}:${ws()}`;
      const offset = Buffer.byteLength(text + wrong.slice(0, at));
      const line = 1 + (text.match(/\n/g) ?? []).length + (wrong.slice(0, at).match(/\n/g) ?? []).length;
      // Enough after it that the parser decides before the end (it may look 16 characters ahead).
      text += `${wrong}${ws()}}${ws()},{"pad":"${'😀ab'.repeat(int(rng, 6, 12))}"}]\n`;
      const path = await file(text, 'json');
      const what = `seed ${seed} (FUZZ_SEED=${seed}): ${JSON.stringify(text)}`;
      const { items, error } = await readToError(path, 'json', chunking(rng));
      expect(error?.message, what).toContain(`is not valid JSON at byte offset ${offset}, line ${line}: `);
      expect(error?.message, what).toContain(good.length === 0 ? 'no element before it was read' : `the ${good.length} element`);
      expect(items.map(written), what).toEqual(good.map(expectedItem));
    }
  });
});

describe('JSON and NDJSON sources: cases the fuzzing found', () => {
  const oneByte = () => 1;

  it('opens a JSON array whose byte order mark the stream cuts into pieces', async () => {
    const path = await file(`${BOM}[{"id":12345678901234567890}]`, 'json');
    const items = await readAll(path, 'json', oneByte);
    expect(items.map(written)).toEqual(['{"id":12345678901234567890}']);
  });

  it('names the line of a first value that is not an array when the blank lines before it span chunks', async () => {
    const path = await file('\n\n  {"id": 1}\n', 'json');
    const { error } = await readToError(path, 'json', oneByte);
    expect(error?.message).toContain('is not a JSON array: at byte offset 4 (line 3) it starts with an object');
  });

  it('skips a blank NDJSON line of only a carriage return after the byte order mark, as any blank line', async () => {
    const path = await file(`${BOM}\r\n{"id":1.10}\n`, 'ndjson');
    // (the line ends with CR LF; a second CR makes it a "CR only" line)
    const withCr = await file(`${BOM}\r\r\n{"id":1.10}\n`, 'ndjson');
    for (const p of [path, withCr]) {
      const items = await readAll(p, 'ndjson', cut.AS_READ);
      expect(items.map((item) => [written(item), item.line, item.position.records])).toEqual([['{"id":1.10}', 2, 1]]);
    }
  });

  it('reads and writes back an NDJSON record nested 10,000 deep, as JSON.parse reads it', async () => {
    const deep = `{"id":1.10,"deep":${'['.repeat(10_000)}0.5e1${']'.repeat(10_000)}}`;
    const path = await file(`${deep}\n`, 'ndjson');
    const items = await readAll(path, 'ndjson', cut.AS_READ);
    expect(items.map((item) => item.kind)).toEqual(['row']);
    expect(written(items[0]!)).toBe(deep);
  });

  it('writes back a JSON array element nested 10,000 deep (what the sink writes for it)', async () => {
    const deep = `{"id":1,"deep":${'{"a":'.repeat(10_000)}1e3${'}'.repeat(10_000)}}`;
    const path = await file(`[${deep}]`, 'json');
    const items = await readAll(path, 'json', cut.AS_READ);
    expect(items.map(written)).toEqual([deep]);
  });

  it('places a syntax error followed by characters outside the BMP (emoji) on the wrong character', async () => {
    const text = `[{"id":1},\n{"name": x${'😀'.repeat(20)}}]`;
    const path = await file(text, 'json');
    const { error } = await readToError(path, 'json', cut.AS_READ);
    expect(error?.message).toContain(`is not valid JSON at byte offset ${text.indexOf('x')}, line 2: expected a value; the 1 element before it is written`);
  });

  it('places a syntax error a few bytes before the end of a 256 KiB read on the wrong character', async () => {
    const filler = `{"note":"${'a'.repeat(256 * 1024 - 30)}"},\n`;
    const at = 256 * 1024 - 5; // the file is read in chunks of 256 KiB: the next one decides
    const text = `[${filler}{"id": `.padEnd(at, ' ') + `x, "more": "${'b'.repeat(40)}"}]`;
    expect(Buffer.byteLength(text.slice(0, text.indexOf('x')))).toBe(at);
    const path = await file(text, 'json');
    const { error } = await readToError(path, 'json', cut.AS_READ);
    expect(error?.message).toContain(`is not valid JSON at byte offset ${at}, line 2: expected a value; the 1 element before it is written`);
  });

  it('rejects a JSON element whose bytes that are not UTF-8 are in a value a duplicate key replaces, as NDJSON does', async () => {
    const bad = Buffer.concat([Buffer.from('{"id":1,"note":"M'), Buffer.from([0xfc]), Buffer.from('ller","note":"Müller"}')]);
    const json = await file(Buffer.concat([Buffer.from('['), bad, Buffer.from(',{"id":2}]')]), 'json');
    const ndjson = await file(Buffer.concat([bad, Buffer.from('\n{"id":2}\n')]), 'ndjson');
    for (const [path, format] of [
      [json, 'json'],
      [ndjson, 'ndjson'],
    ] as const) {
      const items = await readAll(path, format, cut.AS_READ);
      expect(
        items.map((item) => (item.kind === 'row' ? written(item) : item.code)),
        format,
      ).toEqual(['undecodable-bytes', '{"id":2}']);
    }
  });

  it('fails at a backslash followed by a byte that is not UTF-8, instead of reading the text "udcXX" into the string', async () => {
    // "C:\Ärger" saved as Windows-1252 (Ä = 0xC4) with a single backslash: not JSON, and not UTF-8.
    const path = join(dir, 'backslash.json');
    const head = '[{"id":1},\n{"path":"C:\\';
    await writeFile(path, Buffer.concat([Buffer.from(head), Buffer.from([0xc4]), Buffer.from(`rger","more":"${'b'.repeat(20)}"}]`)]));
    const { items, error } = await readToError(path, 'json', cut.AS_READ);
    expect(items.map(written)).toEqual(['{"id":1}']);
    expect(error?.message).toContain(`is not valid JSON at byte offset ${head.length - 1}, line 2: escaped characters; the 1 element before it is written`);
  });
});
