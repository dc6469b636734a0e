import { isUtf8 } from 'node:buffer';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import type { RecordResult } from '@dq/core';
import { seededRandom, type Rand } from '@dq/test-support/random';
import { parseFieldMap } from '../src/field-map.js';
import type { FieldMap } from '../src/field-map.js';
import { parsePointer } from '../src/json-pointer.js';
import { DLQ_HEADERS, decodeMessage, dlqMessage, enrichedMessage, tombstoneMessage } from '../src/message-codec.js';
import { tooLarge } from '../src/message-size.js';

/**
 * Fuzzing of dq-kafka's hand-written message handling, in process: random JSON objects (numbers a
 * double would not give back, every string escape, escaped member names, duplicate and `__proto__`
 * members, any whitespace, a byte order mark, deep nesting) are enriched and compared with what the
 * text says: valid JSON, the original members plus the dq member, every byte outside the replaced
 * values as written. Random bytes never make the decoder throw (a throw would stall the partition)
 * and are dead-lettered with the right reason; mapped fields are read as RFC 6901 says, numbers
 * with their exact value; headers and keys go through kafkajs's own record encoding unchanged; dead letters fit
 * the size limit and say what they leave out. Every failure names its seed; FUZZ_SEED=<seed> runs
 * that case alone.
 */

const FUZZ_SEED = process.env['FUZZ_SEED'];
const seeds = (count: number, base: number): number[] => (FUZZ_SEED !== undefined ? [Number(FUZZ_SEED)] : Array.from({ length: count }, (_, i) => base + i));

const SOURCE = { topic: 'in', partition: 3, offset: '42' };
const RESULT: RecordResult = { status: 'accepted', resultClass: 'B', requestId: 'r-"\\-😀', source: 'api' };
/** The dq member enrichedMessage writes for RESULT at SOURCE, in its own member order. */
const DQ = { status: 'accepted', class: 'B', requestId: 'r-"\\-😀', source: { topic: 'in', partition: 3, offset: '42' } };
const DQ_JSON = JSON.stringify(DQ);

const message = (value: Buffer | string | null, more: Partial<KafkaMessage> = {}): KafkaMessage =>
  ({
    key: Buffer.from('k1'),
    value: typeof value === 'string' ? Buffer.from(value, 'utf8') : value,
    headers: {},
    offset: '42',
    timestamp: '1500000000123',
    attributes: 0,
    ...more,
  }) as KafkaMessage;

/** An object with `name` set as an own member, also when it is `__proto__` (as JSON.parse sets it). */
function withOwn(object: Record<string, unknown>, name: string, value: unknown): Record<string, unknown> {
  Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
  return object;
}

// ---------------------------------------------------------------------------------------------
// Random JSON text (seeded), kept as a tree so each value's text and meaning are known.

type Node =
  | { readonly t: 'num' | 'str' | 'lit'; readonly text: string }
  | { readonly t: 'obj'; readonly text: string; readonly entries: ReadonlyArray<readonly [string, Node]> }
  | { readonly t: 'arr'; readonly text: string; readonly items: readonly Node[] };

const SPACE = [' ', '\t', '\n', '\r', '\r\n', ' \r\t\n  '];
const ws = (r: Rand): string => (r.chance(0.55) ? '' : r.pick(SPACE));

/** Numbers whose text a double does not give back, and plain ones. */
const NUMBERS = [
  '0',
  '-0',
  '-0.0',
  '1.10',
  '0.10',
  '1e2',
  '1E+2',
  '-1e-7',
  '1e400',
  '-1e400',
  '2.5e-400',
  '12345678901234567890',
  '9007199254740993',
  '123.4560',
  '5e-324',
  '10115',
];
function numberText(r: Rand): string {
  if (r.chance(0.5)) return r.pick(NUMBERS);
  const int = r.chance(0.2) ? '0' : String(r.int(1, 9)) + Array.from({ length: r.int(0, 25) }, () => r.int(0, 9)).join('');
  const frac = r.chance(0.3) ? `.${Array.from({ length: r.int(1, 5) }, () => r.int(0, 9)).join('')}` : '';
  const exp = r.chance(0.2) ? `${r.pick(['e', 'E'])}${r.pick(['', '+', '-'])}${r.int(0, 500)}` : '';
  return `${r.chance(0.3) ? '-' : ''}${int}${frac}${exp}`;
}

/** Pieces of string text: every escape, the characters a scanner could trip on, multi-byte text. */
const STRING_PIECES = [
  'a', 'Z', ' ', '}', '{', '[', ']', ',', ':', '/', '~', '~0', '~1', '~01', 'dq', 'ß', 'é', '€', '😀', '\u2028', '\u00a0', '\ufeff',
  '\\"', '\\u0022', '\\\\', '\\u005c', '\\u005C', '\\\\\\"', '\\\\\\\\', '\\/', '\\b', '\\f', '\\n', '\\r', '\\t', '\\u0000',
  '\\ud83d\\ude00', '\\ud800', '\\udfff', '\\u0064', '\\u00e9',
]; // prettier-ignore
const stringText = (r: Rand, pieces = r.int(0, 8)): string => `"${Array.from({ length: pieces }, () => r.pick(STRING_PIECES)).join('')}"`;

/** `name` as JSON string text, each character written plainly or as a \u escape at random. */
function spelled(r: Rand, name: string): string {
  let out = '"';
  for (const c of name) {
    const plain = JSON.stringify(c).slice(1, -1);
    const units = [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');
    out += r.chance(0.3) ? (r.chance(0.5) ? units : units.toUpperCase().replace(/\\U/g, '\\u')) : plain;
  }
  return `${out}"`;
}

function literal(r: Rand): Node {
  const c = r.int(0, 9);
  if (c < 4) return { t: 'num', text: numberText(r) };
  if (c < 8) return { t: 'str', text: stringText(r) };
  return { t: 'lit', text: r.pick(['true', 'false', 'null']) };
}

/** A member name: random string text, or one a reader could take for another. */
function keyText(r: Rand, names: readonly string[]): string {
  if (r.chance(0.25)) return spelled(r, r.pick(names));
  return stringText(r, r.int(0, 3));
}

function value(r: Rand, depth: number, names: readonly string[]): Node {
  if (depth > 3 || r.chance(0.5)) return literal(r);
  return r.chance(0.5) ? object(r, depth + 1, names) : array(r, depth + 1, names);
}

function object(r: Rand, depth: number, names: readonly string[]): Node & { t: 'obj' } {
  const entries: Array<readonly [string, Node]> = [];
  for (let n = r.int(0, 4); n > 0; n--) entries.push([keyText(r, names), value(r, depth, names)]);
  return { t: 'obj', entries, text: objectText(r, entries) };
}

function array(r: Rand, depth: number, names: readonly string[]): Node & { t: 'arr' } {
  const items = Array.from({ length: r.int(0, 4) }, () => value(r, depth, names));
  const text = items.length === 0 ? `[${ws(r)}]` : `[${ws(r)}${items.map((i) => i.text).join(`${ws(r)},${ws(r)}`)}${ws(r)}]`;
  return { t: 'arr', items, text };
}

function objectText(r: Rand, entries: ReadonlyArray<readonly [string, Node]>): string {
  if (entries.length === 0) return `{${ws(r)}}`;
  return `{${ws(r)}${entries.map(([k, v]) => `${k}${ws(r)}:${ws(r)}${v.text}`).join(`${ws(r)},${ws(r)}`)}${ws(r)}}`;
}

/**
 * A top-level object as text, with what its enriched copy must be: each member named `dqField`
 * (however it is spelled) has its value replaced by DQ_JSON, every other byte kept; without one,
 * `,"<dqField>":DQ_JSON` goes before the closing brace.
 */
function topLevel(r: Rand, dqField: string, mapped: ReadonlyArray<readonly [string, Node]>): { text: string; expected: string } {
  const names = ['dq', '__proto__', '', dqField, 'constructor', 'toString', 'a/b', '~1', 'x'];
  const entries: Array<readonly [string, Node]> = [];
  for (let n = r.int(0, 6); n > 0; n--) entries.push([keyText(r, names), value(r, 1, names)]);
  for (const entry of mapped) entries.splice(r.int(0, entries.length), 0, entry);
  if (r.chance(0.4)) entries.splice(r.int(0, entries.length), 0, [spelled(r, dqField), value(r, 1, names)]);
  let text = `${r.chance(0.15) ? '\ufeff' : ''}${ws(r)}{${ws(r)}`;
  let expected = text;
  let replaced = false;
  entries.forEach(([k, v], i) => {
    const head = `${i === 0 ? '' : `${ws(r)},${ws(r)}`}${k}${ws(r)}:${ws(r)}`;
    const own = (JSON.parse(k) as string) === dqField;
    replaced ||= own;
    text += head + v.text;
    expected += head + (own ? DQ_JSON : v.text);
  });
  const close = `${ws(r)}}`;
  const trailing = ws(r);
  text += close + trailing;
  expected += replaced ? close + trailing : `${close.slice(0, -1)}${entries.length > 0 ? ',' : ''}${JSON.stringify(dqField)}:${DQ_JSON}}${trailing}`;
  return { text, expected };
}

/** What `JSON.parse` reads from the enriched copy: the original's members, `dqField`'s value DQ. */
function expectedObject(text: string, dqField: string): Record<string, unknown> {
  return withOwn(JSON.parse(text.replace(/^\ufeff/, '')) as Record<string, unknown>, dqField, DQ);
}

const DQ_FIELDS = ['dq', 'quality', 'd"q', 'a\\b', '', 'ü', '😀', '__proto__', 'x\u2028y', 'dq field', 'constructor', '\u0000', '}'];
const MAP = parseFieldMap('street=/s', 'address');
const streetMember = (r: Rand): readonly [string, Node] => [spelled(r, 's'), { t: 'str', text: `"a${stringText(r).slice(1)}` }];

function enrich(text: string | Buffer, dqField: string, map: FieldMap = MAP): string {
  const decoded = decodeMessage(message(text), map);
  if (decoded.kind !== 'record') throw new Error(`expected a record, got ${decoded.kind}: ${decoded.kind === 'reject' ? decoded.reason : ''}`);
  const out = enrichedMessage(decoded, RESULT, SOURCE, dqField).value;
  if (typeof out !== 'string') throw new Error('the enriched value should be text');
  return out;
}

describe('dq-kafka enrichment of random JSON objects', () => {
  it('the enriched value is the original text with only the dq member added or its values replaced, for every --dq-field', () => {
    for (const seed of seeds(3000, 1)) {
      const r = seededRandom(seed);
      const dqField = r.pick(DQ_FIELDS);
      const { text, expected } = topLevel(r, dqField, [streetMember(r)]);
      const what = `seed ${seed}, --dq-field ${JSON.stringify(dqField)}, value ${JSON.stringify(text)}`;
      const out = enrich(text, dqField);
      expect(out, what).toBe(expected);
      expect(Buffer.from(out, 'utf8').equals(Buffer.from(expected, 'utf8')), what).toBe(true);
      expect(JSON.parse(out.replace(/^\ufeff/, '')), what).toEqual(expectedObject(text, dqField));
    }
  });

  it('objects 10,000 levels deep, before and after a dq member and around one nested inside, are enriched without a stack overflow', () => {
    const depth = 10_000;
    const arrays = `${'['.repeat(depth)}"}"${']'.repeat(depth)}`;
    const objects = `${'{"dq":'.repeat(depth)}1.10${'}'.repeat(depth)}`;
    const cases: Array<[string, string]> = [
      [`{"s":"Hauptstr","deep":${arrays},"dq":null,"more":${objects}}`, `{"s":"Hauptstr","deep":${arrays},"dq":${DQ_JSON},"more":${objects}}`],
      [`{"more":${objects},"s":"Hauptstr", "deep":${arrays} }\n`, `{"more":${objects},"s":"Hauptstr", "deep":${arrays} ,"dq":${DQ_JSON}}\n`],
      [`{"dq":${objects},"s":"Hauptstr","\\u0064q":${arrays}}`, `{"dq":${DQ_JSON},"s":"Hauptstr","\\u0064q":${DQ_JSON}}`],
    ];
    for (const [text, expected] of cases) {
      const out = enrich(text, 'dq');
      expect(out === expected, text.slice(0, 60)).toBe(true);
      // (toEqual would recurse 10,000 levels deep itself.)
      const parsed = JSON.parse(out) as Record<string, unknown>;
      const keys = Object.keys(JSON.parse(text) as object);
      expect(Object.keys(parsed)).toEqual(keys.includes('dq') ? keys : [...keys, 'dq']);
      expect(parsed['dq']).toEqual(DQ);
    }
    // A mapped number at the bottom of 10,000 levels keeps its exact value.
    const pointer = `/a${'/a'.repeat(depth - 1)}`;
    const deep = `{"s":"x","a":${'{"a":'.repeat(depth - 1)}12345678901234567890${'}'.repeat(depth - 1)}}`;
    const decoded = decodeMessage(message(deep), [...MAP, { field: 'postalCode', pointer: parsePointer(pointer) }]);
    expect(decoded.kind === 'record' && String(decoded.record['postalCode'])).toBe('12345678901234567890');
  });

  it('edge objects: {} and { }, a byte order mark, trailing whitespace, duplicate, escaped and __proto__ members', () => {
    const cases: Array<[string, string, string]> = [
      ['{"s":"x"}', 'dq', `{"s":"x","dq":${DQ_JSON}}`],
      ['{ "s" : "x" }\r\n\t ', 'dq', `{ "s" : "x" ,"dq":${DQ_JSON}}\r\n\t `],
      ['\ufeff{"s":"x"}', 'dq', `\ufeff{"s":"x","dq":${DQ_JSON}}`],
      ['{"s":"x","__proto__":{"dq":1}}', '__proto__', `{"s":"x","__proto__":${DQ_JSON}}`],
      ['{"s":"x"}', '__proto__', `{"s":"x","__proto__":${DQ_JSON}}`],
      ['{"s":"x","dq":"a\\"}","dq":[1,"]"],"d\\u0071":{}}', 'dq', `{"s":"x","dq":${DQ_JSON},"dq":${DQ_JSON},"d\\u0071":${DQ_JSON}}`],
      ['{"s":"x","\\"":1}', '"', `{"s":"x","\\"":${DQ_JSON}}`],
      ['{"s":"x","":0}', '', `{"s":"x","":${DQ_JSON}}`],
      ['{"s":"x","a\\\\":true}', 'a\\', `{"s":"x","a\\\\":${DQ_JSON}}`],
      ['{"s":"x","\\ud83d\\ude00":-0}', '😀', `{"s":"x","\\ud83d\\ude00":${DQ_JSON}}`],
    ];
    for (const [text, dqField, expected] of cases) expect(enrich(text, dqField), text).toBe(expected);
    // An object with nothing but the mapped member is the smallest a record comes from; {} and { } have no street.
    for (const text of ['{}', '{ }', '\ufeff{\n}\n']) expect(decodeMessage(message(text), MAP)).toMatchObject({ kind: 'reject', code: 'missing-field' });
    expect(enrich('{ }', 'dq', [])).toBe(`{ "dq":${DQ_JSON}}`);
  });
});

// ---------------------------------------------------------------------------------------------
// Bytes that are not a JSON object: dead-lettered with the right reason, the decoder never throws.

/** Where the first malformed UTF-8 sequence starts: the end of the longest prefix that is valid UTF-8. */
function firstBadByte(bytes: Buffer): number {
  for (let j = bytes.length; j >= 0; j--) if (isUtf8(bytes.subarray(0, j))) return j;
  return 0;
}

/** What decodeMessage must make of `bytes` with MAP, as a reference reader sees them. */
function classify(bytes: Buffer): { kind: 'record' | 'reject'; code?: string } {
  if (bytes.length === 0) return { kind: 'reject', code: 'empty-value' };
  if (!isUtf8(bytes)) return { kind: 'reject', code: 'not-json' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8').replace(/^\ufeff/, ''));
  } catch {
    return { kind: 'reject', code: 'not-json' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { kind: 'reject', code: 'not-object' };
  const s: unknown = Object.hasOwn(parsed, 's') ? (parsed as Record<string, unknown>)['s'] : undefined;
  if (s === undefined || s === null || (typeof s === 'string' && s.trim() === '')) return { kind: 'reject', code: 'missing-field' };
  return typeof s === 'string' || typeof s === 'number' ? { kind: 'record' } : { kind: 'reject', code: 'bad-field-type' };
}

/** Malformed UTF-8: stray continuation bytes, overlongs, UTF-16 surrogates, beyond U+10FFFF, bytes never used, truncated sequences. */
const BAD_UTF8 = [
  [0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0x80], [0xe0, 0x9f, 0xbf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf],
  [0xf0, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xf8], [0xfe], [0xff], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3],
]; // prettier-ignore

/** `bytes` with a random edit: a byte or a malformed sequence put in, a cut, a byte dropped or changed. */
function mutate(r: Rand, bytes: Buffer): Buffer {
  const at = r.int(0, bytes.length);
  switch (r.int(0, 5)) {
    case 0:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(r.pick(BAD_UTF8)), bytes.subarray(at)]);
    case 1:
      return Buffer.concat([bytes, Buffer.from(r.pick(BAD_UTF8))]); // a truncated or bad sequence at the end
    case 2:
      return bytes.subarray(0, at);
    case 3:
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
    case 4:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([r.int(0, 255)]), bytes.subarray(at)]);
    default: {
      const copy = Buffer.from(bytes);
      if (copy.length > 0) copy[Math.min(at, copy.length - 1)] = r.pick([0x22, 0x5c, 0x7d, 0x7b, 0x2c, 0x3a, 0x20, 0x00, 0xff, r.int(0, 255)]);
      return copy;
    }
  }
}

describe('dq-kafka decoding of any bytes', () => {
  it('never throws, and dead-letters a value that is not UTF-8, not JSON, not an object or without the mapped field with the right reason, byte for byte', () => {
    for (const seed of seeds(4000, 100_000)) {
      const r = seededRandom(seed);
      const names = ['s', 'dq'];
      const street: readonly [string, Node] = r.chance(0.8) ? streetMember(r) : [spelled(r, 's'), value(r, 2, names)];
      const whole = r.int(0, 9);
      // Mostly an object, now and then another JSON value (a byte order mark and whitespace around it).
      const text =
        whole < 8
          ? topLevel(r, 'dq', [street]).text
          : `${r.chance(0.2) ? '\ufeff' : ''}${ws(r)}${(whole === 8 ? array(r, 1, names) : literal(r)).text}${ws(r)}`;
      let bytes: Buffer = Buffer.from(text, 'utf8');
      for (let n = r.chance(0.3) ? 0 : r.int(1, 3); n > 0; n--) bytes = mutate(r, bytes);
      if (r.chance(0.05)) bytes = Buffer.from(Array.from({ length: r.int(0, 12) }, () => r.int(0, 255)));
      const what = `seed ${seed}, value ${bytes.toString('hex')}`;
      const m = message(Buffer.from(bytes));
      const decoded = decodeMessage(m, MAP);
      const expected = classify(bytes);
      expect(decoded.kind === 'reject' ? { kind: 'reject', code: decoded.code } : { kind: decoded.kind }, what).toEqual(expected);
      if (decoded.kind === 'record') {
        const out = enrichedMessage(decoded, RESULT, SOURCE, 'dq').value as string;
        expect(JSON.parse(out.replace(/^\ufeff/, '')), what).toEqual(expectedObject(bytes.toString('utf8'), 'dq'));
        continue;
      }
      if (decoded.kind !== 'reject') throw new Error(`${what}: unexpected ${decoded.kind}`);
      expect(decoded.reason, what).toMatch(/\S/);
      if (!isUtf8(bytes)) {
        const at = firstBadByte(bytes);
        expect(decoded.reason, what).toContain(`a malformed sequence starts at byte ${at}, 0x${bytes[at]!.toString(16).padStart(2, '0')})`);
      }
      const letter = dlqMessage(m, SOURCE, { code: decoded.code, message: `offset 42: ${decoded.reason}` }, 1_000_000);
      expect(Buffer.isBuffer(letter.value) && letter.value.equals(bytes), what).toBe(true);
      expect(letter.key).toEqual(Buffer.from('k1'));
      expect(letter.headers, what).toMatchObject({ [DLQ_HEADERS.code]: decoded.code, [DLQ_HEADERS.offset]: '42' });
    }
  });

  it('names the first bad byte of each malformed UTF-8 sequence, also one cut off at the end of the value', () => {
    for (const bad of BAD_UTF8) {
      for (const [head, tail] of [
        ['{"s":"Haupt', 'str"}'],
        ['{"s":"Hauptstr"}', ''],
        ['', '{"s":"x"}'],
        ['{"s":"ß', '"}'],
      ]) {
        const bytes = Buffer.concat([Buffer.from(head!), Buffer.from(bad), Buffer.from(tail!)]);
        const at = Buffer.byteLength(head!);
        expect(decodeMessage(message(bytes), MAP), bytes.toString('hex')).toMatchObject({
          kind: 'reject',
          code: 'not-json',
          reason: `the value is not valid UTF-8 (a malformed sequence starts at byte ${at}, 0x${bad[0]!.toString(16).padStart(2, '0')}), so it is not JSON text; the producer must write UTF-8`,
        });
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
// --map: RFC 6901 pointers into random objects.

const INDEX = /^(0|[1-9]\d*)$/;

/** The node `tokens` refer to, as JSON.parse and RFC 6901 read the text (of duplicate members, the last). */
function resolveNode(root: Node, tokens: readonly string[]): Node | undefined {
  let at: Node | undefined = root;
  for (const token of tokens) {
    if (at.t === 'obj') {
      let found: Node | undefined;
      for (const [k, v] of at.entries) if ((JSON.parse(k) as string) === token) found = v;
      at = found;
    } else if (at.t === 'arr') at = INDEX.test(token) ? at.items[Number(token)] : undefined;
    else return undefined;
    if (at === undefined) return undefined;
  }
  return at;
}

/** Reference tokens along a random path into `root`, now and then one that refers to nothing. */
function randomPath(r: Rand, root: Node): string[] {
  const tokens: string[] = [];
  let at: Node | undefined = root;
  while (at !== undefined && (tokens.length === 0 || r.chance(0.6))) {
    if (r.chance(0.08)) {
      tokens.push(r.pick(['nope', '', '-', '01', '1.0', ' 0', '+1', '0x0', '~', 'constructor', '__proto__', 'length']));
      break;
    }
    if (at.t === 'obj' && at.entries.length > 0) {
      const [k, v]: readonly [string, Node] = r.pick(at.entries);
      tokens.push(JSON.parse(k) as string);
      at = v;
    } else if (at.t === 'arr' && at.items.length > 0) {
      const i = r.int(0, at.items.length - 1);
      tokens.push(String(i));
      at = at.items[i];
    } else break;
  }
  return tokens;
}

/** A JSON number's exact value as m·10^e. */
function rational(text: string): [bigint, bigint] {
  const [, int = '', frac = '', exp = '0'] = /^(-?\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text) ?? [];
  return [BigInt(`${int}${frac}`), BigInt(exp) - BigInt(frac.length)];
}

/** What the platform must be sent for a number written `text`: JavaScript's text for it where that has the same exact value, else `text`. */
function exactNumber(text: string): string {
  const js = String(JSON.parse(text));
  if (!/^-?\d/.test(js)) return text; // Infinity
  const [[m1, e1], [m2, e2]] = [rational(js), rational(text)];
  const e = e1 < e2 ? e1 : e2;
  return m1 * 10n ** (e1 - e) === m2 * 10n ** (e2 - e) ? js : text;
}

const pointerText = (tokens: readonly string[]): string => tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

describe('dq-kafka --map on random objects', () => {
  it('reads what the pointer refers to: ~0 and ~1, "" and array indexes as RFC 6901 says; a number with its exact value', () => {
    for (const seed of seeds(3000, 200_000)) {
      const r = seededRandom(seed);
      const names = ['a/b', '~1', '~01', '', ' ', '0', '01', '-', '__proto__', 'dq'];
      const root = object(r, 0, names);
      const entries = [...root.entries];
      entries.splice(r.int(0, entries.length), 0, streetMember(r));
      const doc: Node = { t: 'obj', entries, text: objectText(r, entries) };
      const tokens = randomPath(r, doc);
      const text = pointerText(tokens);
      const pointer = parsePointer(text);
      expect(pointer.tokens).toEqual(tokens);
      if (!text.includes(',') && text.trim() === text) expect(parseFieldMap(`street=/s, postalCode=${text}`, 'address')[1]!.pointer.tokens).toEqual(tokens);
      const what = `seed ${seed}, pointer ${JSON.stringify(text)}, value ${JSON.stringify(doc.text)}`;
      const decoded = decodeMessage(message(doc.text), [...MAP, { field: 'postalCode', pointer }]);
      const node = resolveNode(doc, tokens);
      const string = node?.t === 'str' ? (JSON.parse(node.text) as string) : undefined;
      if (node === undefined || node.text === 'null' || string?.trim() === '') {
        expect(decoded, what).toMatchObject({ kind: 'reject', code: 'missing-field', reason: `mapped field postalCode (${text}) is missing or empty` });
      } else if (node.t === 'obj' || node.t === 'arr' || node.t === 'lit') {
        expect(decoded, what).toMatchObject({ kind: 'reject', code: 'bad-field-type' });
      } else {
        if (decoded.kind !== 'record') throw new Error(`${what}: expected a record, got ${decoded.kind}`);
        // The engine sends String() of a record's value (trimmed).
        expect(String(decoded.record['postalCode']), what).toBe(node.t === 'num' ? exactNumber(node.text) : string);
      }
    }
  });

  it('sends a mapped number with its exact value: as JavaScript writes it where that is the number written, else as the message writes it', () => {
    const map = parseFieldMap('postalCode=/zip,houseNumber=/no/0,locality=/x~1y', 'address');
    for (const [written, sent] of [
      ['10115', '10115'],
      ['10115.0', '10115'],
      ['1e2', '100'],
      ['1E+2', '100'],
      ['0.10', '0.1'],
      ['-0', '0'],
      ['1e21', '1e+21'],
      ['1.5e-7', '1.5e-7'],
      // A double would round these: sent as written.
      ['12345678901234567890', '12345678901234567890'],
      ['9007199254740993', '9007199254740993'],
      ['0.1000000000000000055511151231257827', '0.1000000000000000055511151231257827'],
      ['1e400', '1e400'],
      ['-1E+400', '-1E+400'],
      ['2.5e-400', '2.5e-400'],
    ]) {
      const decoded = decodeMessage(message(`{"zip":${written},"no":[${written}, 1],"x/y":1,"x/y" : ${written} }`), map);
      if (decoded.kind !== 'record') throw new Error(`${written}: expected a record`);
      // The engine sends String() of a record's value (trimmed).
      const { postalCode, houseNumber, locality } = decoded.record;
      expect([postalCode, houseNumber, locality].map(String), written).toEqual([sent, sent, sent]);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Keys, headers and timestamps through kafkajs's own record encoding, as a fetch reads them and a
// send writes them.

interface KafkajsEncoder {
  buffer: Buffer;
  writeInt8(v: number): KafkajsEncoder;
  writeVarInt(v: number): KafkajsEncoder;
  writeVarLong(v: number): KafkajsEncoder;
  writeVarIntString(v: string): KafkajsEncoder;
  writeVarIntBytes(v: Buffer | string | null): KafkajsEncoder;
  writeVarIntArray(v: KafkajsEncoder[]): KafkajsEncoder;
}
interface KafkajsDecoder {
  readVarInt(): number;
  readInt8(): number;
  readVarLong(): unknown;
  readVarIntBytes(): Buffer | null;
  readVarIntArray<T>(reader: (d: KafkajsDecoder) => T): T[];
}
const kafkajs = createRequire(import.meta.url);
const Encoder = kafkajs('kafkajs/src/protocol/encoder.js') as new () => KafkajsEncoder;
const Decoder = kafkajs('kafkajs/src/protocol/decoder.js') as new (buffer: Buffer) => KafkajsDecoder;
/** kafkajs's record encoder: what a send writes for a message. */
const encodeRecord = kafkajs('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (record: Message) => KafkajsEncoder;
/** kafkajs's record decoder: what a fetch makes of a record (headers as an object of names). */
const decodeRecord = kafkajs('kafkajs/src/protocol/recordBatch/record/v0/decoder.js') as (
  decoder: KafkajsDecoder,
  context: { firstOffset: string; firstTimestamp: string },
) => KafkaMessage;
const readHeader = kafkajs('kafkajs/src/protocol/recordBatch/header/v0/decoder.js') as (d: KafkajsDecoder) => { key: string; value: Buffer | null };

type HeaderList = Array<[string, Buffer | null]>;

/** A record as a producer may write it (a header value may be null), read as kafkajs's fetch reads it. */
function fetched(key: Buffer | null, value: Buffer | null, headers: HeaderList): KafkaMessage {
  const record = new Encoder()
    .writeInt8(0)
    .writeVarLong(0)
    .writeVarInt(0)
    .writeVarIntBytes(key)
    .writeVarIntBytes(value)
    .writeVarIntArray(headers.map(([k, v]) => new Encoder().writeVarIntString(k).writeVarIntBytes(v)));
  const body = new Encoder().writeVarInt(record.buffer.length);
  const decoder = new Decoder(Buffer.concat([body.buffer, record.buffer]));
  decoder.readVarInt();
  return decodeRecord(decoder, { firstOffset: '42', firstTimestamp: '1500000000123' });
}

/** What a send of `message` writes, read back in the order written: key, value and every header. */
function sent(message: Message): { key: Buffer | null; value: Buffer | null; headers: HeaderList } {
  const decoder = new Decoder(encodeRecord(message).buffer);
  decoder.readVarInt();
  decoder.readInt8();
  decoder.readVarLong();
  decoder.readVarInt();
  const key = decoder.readVarIntBytes();
  const value = decoder.readVarIntBytes();
  const headers = decoder.readVarIntArray(readHeader).map(({ key: k, value: v }): [string, Buffer | null] => [k, v]);
  return { key, value, headers };
}

/** The headers a copy must carry: the input's, grouped by name as kafkajs's object of names orders them, null written empty, dq-* left out. */
function expectedHeaders(headers: HeaderList): HeaderList {
  const byName = Object.create(null) as Record<string, Buffer[]>;
  for (const [name, v] of headers) if (!name.startsWith('dq-')) (byName[name] ??= []).push(v ?? Buffer.alloc(0));
  return Object.keys(byName).flatMap((name) => byName[name]!.map((v): [string, Buffer] => [name, v]));
}

const HEADER_NAMES = [
  'trace',
  'x',
  'constructor',
  '__proto__',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  '__defineGetter__',
  '1',
  '0',
  'ü',
  '',
  'dq-error-code',
  'dq-original-offset',
  'dq-left-out',
];
const randomBytes = (r: Rand, max: number): Buffer =>
  Buffer.from(Array.from({ length: r.int(0, max) }, () => (r.chance(0.5) ? r.int(0x20, 0x7e) : r.int(0, 255))));

describe('dq-kafka keys, headers and timestamps', () => {
  it('the output, the dead letter and a passed-on tombstone carry the input key and every header byte for byte, whatever their names', () => {
    for (const seed of seeds(1500, 300_000)) {
      const r = seededRandom(seed);
      const headers: HeaderList = Array.from({ length: r.int(0, 6) }, () => [r.pick(HEADER_NAMES), r.chance(0.15) ? null : randomBytes(r, 6)]);
      const key = r.chance(0.1) ? null : randomBytes(r, 12);
      const m = fetched(key, Buffer.from('{"s":"Hauptstr"}'), headers);
      const what = `seed ${seed}, key ${key?.toString('hex')}, headers ${JSON.stringify(headers.map(([n, v]) => [n, v?.toString('hex') ?? null]))}`;
      const decoded = decodeMessage(m, MAP);
      if (decoded.kind !== 'record') throw new Error(`${what}: expected a record`);
      const copies: Array<[string, Message]> = [
        ['output', enrichedMessage(decoded, RESULT, SOURCE, 'dq')],
        ['dead letter', dlqMessage(m, SOURCE, { code: 'field-error', message: 'offset 42: ü' })],
        ['trimmed dead letter', dlqMessage({ ...m, value: Buffer.alloc(30_000) }, SOURCE, { code: 'too-large', message: 'offset 42' }, 20_000)],
      ];
      if (key !== null) copies.push(['tombstone', tombstoneMessage({ ...m, value: null })]);
      for (const [name, copy] of copies) {
        expect(copy.timestamp, `${name}: ${what}`).toBe('1500000000123');
        const out = sent(copy); // kafkajs must be able to write it: a send that throws stops the partition
        expect(out.key, `${name}: ${what}`).toEqual(key);
        const own = name.startsWith('output') || name === 'tombstone' ? [] : out.headers.filter(([n]) => n.startsWith('dq-'));
        expect(
          own.map(([n]) => n),
          `${name}: ${what}`,
        ).toEqual(
          name === 'output' || name === 'tombstone'
            ? []
            : [
                'dq-error-code',
                'dq-error-message',
                'dq-original-topic',
                'dq-original-partition',
                'dq-original-offset',
                ...(name.startsWith('trimmed') ? ['dq-left-out'] : []),
              ],
        );
        expect(out.headers.slice(0, out.headers.length - own.length), `${name}: ${what}`).toEqual(expectedHeaders(headers));
      }
    }
  });
});

describe('dq-kafka headers named like members of Object.prototype', () => {
  it.each(['__proto__', 'constructor', 'toString'])('a header named %s is passed on to the output and the dead letter, each of its values once', (name) => {
    const [v1, v2, t] = [Buffer.from('v1'), Buffer.from([0xff, 0x00]), Buffer.from('t')];
    const m = fetched(Buffer.from('k'), Buffer.from('{"s":"Hauptstr"}'), [
      [name, v1],
      ['trace', t],
      [name, v2],
    ]);
    const decoded = decodeMessage(m, MAP);
    if (decoded.kind !== 'record') throw new Error('expected a record');
    const expected: HeaderList = [
      [name, v1],
      [name, v2],
      ['trace', t],
    ];
    expect(sent(enrichedMessage(decoded, RESULT, SOURCE, 'dq')).headers).toEqual(expected);
    expect(sent(dlqMessage(m, SOURCE, { code: 'field-error', message: 'offset 42: x' })).headers.slice(0, 3)).toEqual(expected);
  });
});

// ---------------------------------------------------------------------------------------------
// Dead letters within --max-message-bytes.

/** Whether two header values hold the same bytes (toEqual takes seconds on large buffers). */
function sameBytes(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => sameBytes(v, b[i]));
  return a === b || (Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b));
}

const OWN_ORDER = ['dq-error-code', 'dq-error-message', 'dq-original-topic', 'dq-original-partition', 'dq-original-offset', 'dq-request-id', 'dq-left-out'];
const PARTS = ['value', 'headers', 'key'] as const;

describe('dq-kafka dead letters and --max-message-bytes', () => {
  it('a dead letter always fits, keeps what it can in order, and dq-left-out names exactly the parts it left out', () => {
    for (const seed of seeds(1500, 400_000)) {
      const r = seededRandom(seed);
      const size = (): number => r.pick([0, r.int(0, 100), r.int(0, 5000), r.int(0, 60_000)]);
      const bytes = (n: number): Buffer => Buffer.alloc(n, r.int(0, 255));
      const headers: IHeaders = {};
      for (let n = r.int(0, 4); n > 0; n--) {
        const name = r.pick(['trace', 'a', 'b', 'ü', 'constructor', 'dq-error-code']);
        headers[name] = r.chance(0.2) ? [bytes(size()), bytes(size())] : r.chance(0.1) ? (null as unknown as Buffer) : bytes(size());
      }
      const input = message(r.chance(0.15) ? null : bytes(size()), { key: r.chance(0.15) ? null : bytes(size()), headers });
      const limit = r.int(4096, 150_000);
      const source = { topic: 't'.repeat(r.int(1, 249)), partition: r.int(0, 999), offset: String(r.int(0, 1e9)) };
      const reason = {
        code: 'too-large',
        message: Array.from({ length: r.int(0, 1500) }, () => r.pick(['a', 'ü', '€', '😀', ' '])).join(''),
        ...(r.chance(0.5) ? { requestId: 'r-1' } : {}),
      };
      const what = `seed ${seed}, limit ${limit}`;
      const full = dlqMessage(input, source, reason);
      const letter = dlqMessage(input, source, reason, limit);
      expect(tooLarge(letter, limit), what).toBe(false);
      const names = Object.keys(letter.headers!);
      const own = names.filter((n) => OWN_ORDER.includes(n));
      expect(own, what).toEqual(OWN_ORDER.filter((n) => own.includes(n)));
      expect(names.slice(names.length - own.length), what).toEqual(own);
      const leftOut = (letter.headers!['dq-left-out'] as string | undefined)?.split(',') ?? [];
      if (!tooLarge(full, limit)) expect(leftOut, `${what}: it would have fit whole`).toEqual([]);
      expect(leftOut, what).toEqual(PARTS.filter((p) => leftOut.includes(p)));
      const original = { value: input.value, key: input.key, headers: Object.keys(full.headers!).filter((n) => !OWN_ORDER.includes(n)) };
      for (const part of PARTS) {
        const had = part === 'headers' ? original.headers.length > 0 : (original[part]?.length ?? 0) > 0;
        if (leftOut.includes(part)) {
          expect(had, `${what}: dq-left-out names the ${part}, which the input did not have`).toBe(true);
          expect(letter.headers!['dq-error-message'], what).toMatch(new RegExp(`the ${part} \\(\\d+ bytes\\)`));
        }
      }
      // The reason is cut where it must be, never inside a character: the header is the reason's own text.
      const said = String(letter.headers!['dq-error-message']);
      expect(said.includes('\uFFFD') || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(said), `${what}: ${JSON.stringify(said.slice(-20))}`).toBe(false);
      if (leftOut.length === 0) expect(reason.message.startsWith(said), what).toBe(true);
      if (leftOut.includes('value')) expect(Buffer.isBuffer(letter.value) && letter.value.length === 0, what).toBe(true);
      else expect(letter.value, what).toBe(input.value);
      expect(letter.key, what).toBe(leftOut.includes('key') ? null : input.key);
      expect(names.slice(0, names.length - own.length), what).toEqual(leftOut.includes('headers') ? [] : original.headers);
      for (const n of leftOut.includes('headers') ? [] : original.headers)
        expect(sameBytes(letter.headers![n], full.headers![n]), `${what}: header ${n}`).toBe(true);
    }
  });
});
