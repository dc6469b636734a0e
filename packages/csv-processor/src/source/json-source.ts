import { isUtf8 } from 'node:buffer';
import { Transform } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { pipeline } from 'node:stream';
import Parser from 'stream-json/Parser.js';
import StreamArray from 'stream-json/streamers/StreamArray.js';
import { CsvError } from '../errors.js';
import { sizeOf, tooLargeReason } from './csv-source.js';
import { bomLength, hasEscapedBytes, lossyDecode, recordDecoder, utf8Escaper } from './decode.js';
import { frameRecords } from './framer.js';
import { inputBytes, laterUtf8Refusal, type InputBytes } from './input-bytes.js';
import { duplicateKey, jsonNumber, JsonNumber, parseJson, setMember, stringifyJson } from './lossless-json.js';
import type { InputEncoding, Source, SourceItem, SourceOptions, SourcePosition } from './types.js';

/** Opens an NDJSON file: one JSON object per line; other lines are rejected with their number. */
export async function openNdjsonSource(options: SourceOptions): Promise<Source> {
  const input = await inputBytes(options.path, options.encoding ?? 'utf8', await sizeOf(options), options.file);
  const { encoding, totalBytes } = input;
  const decode = recordDecoder(encoding);
  // Latin-1 or Windows-1252 over a plain ASCII start: UTF-8 further on stops the read before its record.
  const utf8Watch = input.utf8Watch?.();
  const start = options.start;
  const stream = input.stream(start?.offset ?? 0);
  const frames = frameRecords(stream, {
    quotes: false,
    startOffset: start?.offset ?? 0,
    startLine: start?.line ?? 1,
    maxRecordBytes: options.maxRecordBytes,
  });

  async function* items(): AsyncGenerator<SourceItem> {
    let records = start?.records ?? 0;
    try {
      for await (const record of frames) {
        // The first record loses the file's byte order mark (a line of only it is blank: the framer skips it).
        const bytes = record.nextOffset - record.bytes.length <= 3 ? record.bytes.subarray(bomLength(record.bytes)) : record.bytes;
        const found = utf8Watch?.(bytes, record.tooLarge !== undefined);
        if (found) throw laterUtf8Refusal(options.path, encoding, found, record.line + found.line - 1);
        records += 1;
        const position: SourcePosition = { records, offset: record.nextOffset, line: record.line + 1 };
        if (record.tooLarge) {
          yield {
            kind: 'reject',
            line: record.line,
            code: 'record-too-large',
            reason: tooLargeReason(record, options),
            raw: lossyDecode(record.bytes, encoding),
            position,
          };
          continue;
        }
        const raw = () => lossyDecode(bytes, encoding);
        const text = decode(bytes);
        if (text === undefined) {
          yield {
            kind: 'reject',
            line: record.line,
            code: 'undecodable-bytes',
            reason: 'bytes that are not valid UTF-8; pass --encoding latin1 or windows-1252 if the file is not UTF-8',
            raw: raw(),
            position,
          };
          continue;
        }
        let value: unknown;
        try {
          value = parseJson(text);
        } catch (err) {
          yield { kind: 'reject', line: record.line, code: 'invalid-json', reason: `not valid JSON: ${(err as Error).message}`, raw: raw(), position };
          continue;
        }
        if (!isPlainObject(value)) {
          yield { kind: 'reject', line: record.line, code: 'not-an-object', reason: `expected a JSON object, found ${describe(value)}`, raw: raw(), position };
          continue;
        }
        const twice = duplicateKey(text, value);
        if (twice !== undefined) {
          yield { kind: 'reject', line: record.line, code: 'duplicate-key', reason: duplicateReason(twice), raw: raw(), position };
          continue;
        }
        yield { kind: 'row', line: record.line, object: value, position };
      }
    } finally {
      stream.destroy();
    }
  }

  return { format: 'ndjson', totalBytes, items: items(), close: async () => void stream.destroy() };
}

/**
 * Opens a JSON file holding one array of objects, streamed element by element with stream-json.
 * Element numbers (1-based) stand in for line numbers. A file that does not start with an array is
 * refused at once; a syntax error or a truncated array ends the read with `invalid-json` naming
 * where (byte offset, line) and what is wrong, after the elements before it: unlike lines, array
 * elements cannot be found again after an error.
 */
export async function openJsonArraySource(options: SourceOptions): Promise<Source> {
  const input = await inputBytes(options.path, options.encoding ?? 'utf8', await sizeOf(options), options.file);
  const toUtf8 = utf8Of(input.encoding);
  await expectArray(options.path, input);
  const skip = options.start?.records ?? 0;
  const file = input.stream();
  let bytesRead = 0;
  // Bytes that are not valid UTF-8 reach the parser escaped, so their element can be rejected
  // (utf8Escaper); other encodings decode every byte.
  const escaper = input.encoding === 'utf8' ? utf8Escaper() : undefined;
  const guard = escapeLetterGuard();
  const counted = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytesRead += chunk.length;
      done(null, escaper ? escaper.push(guard(chunk)) : toUtf8(chunk));
    },
    flush(done) {
      const rest = escaper?.end();
      done(null, rest && rest.length > 0 ? rest : undefined);
    },
  });
  const elements = StreamArray.make();
  // The assembler stores each key as an own property (setMember: `"__proto__"` is a key like any
  // other, not the object's prototype, and the order keys were written in is kept), and numbers as
  // written (lossless-json.ts): it would parseFloat them.
  const assembler = (elements as unknown as { _assembler: Assembler })._assembler;
  // A value holding escaped bytes that a later value under the same key replaces leaves its object
  // marked: the element held such bytes all the same (see undecodable).
  const replaced = new WeakSet<object>();
  // Objects that got a key a second time, with that key (see duplicateKey): their element is rejected.
  const twice = new WeakMap<object, string>();
  /** Objects marked in `twice` whose element was not rejected yet: elements are looked through only while there are some. */
  let unclaimed = 0;
  const save = (value: unknown): void => {
    if (assembler.done) assembler.current = value;
    else if (Array.isArray(assembler.current)) assembler.current.push(value);
    else {
      const object = assembler.current as Record<string, unknown>;
      const key = assembler.key!;
      if (Object.hasOwn(object, key)) {
        if (escaper && escaper.escaped > 0 && undecodable(object[key], replaced)) replaced.add(object);
        if (!twice.has(object)) {
          twice.set(object, key);
          unclaimed += 1;
        }
      }
      setMember(object, key, value);
      assembler.key = null;
    }
  };
  assembler._saveValue = save;
  assembler.stringValue = save;
  assembler.numberValue = (text) => save(jsonNumber(text));
  const parser = Parser.make();
  // A syntax error must not discard the elements parsed before it (pipeline would destroy the
  // streamer holding their tokens): the parser's error is kept aside, the rest of the input
  // ignored, and the token stream ends; the loop below raises the error after those elements.
  let syntaxError: Error | undefined;
  const tolerant = parser as unknown as { _processBuffer(callback: (err?: Error | null) => void): void; _buffer: string };
  const processBuffer = tolerant._processBuffer.bind(parser);
  tolerant._processBuffer = (callback) => {
    if (syntaxError) {
      tolerant._buffer = '';
      return callback(null);
    }
    processBuffer((err) => {
      if (err) {
        syntaxError = err;
        tolerant._buffer = '';
      }
      callback(null);
    });
  };
  // pipeline hands a read error of any stage to the others, so it reaches the loop below.
  pipeline(file, counted, parser, elements, () => undefined);

  async function* items(): AsyncGenerator<SourceItem> {
    let records = 0;
    try {
      for await (const { value } of elements as AsyncIterable<{ key: number; value: unknown }>) {
        records += 1;
        if (records <= skip) continue;
        const position: SourcePosition = { records, offset: bytesRead, line: records + 1 };
        if (escaper && escaper.escaped > 0 && undecodable(value, replaced)) {
          yield {
            kind: 'reject',
            line: records,
            code: 'undecodable-bytes',
            reason: `array element ${records}: bytes that are not valid UTF-8; pass --encoding latin1 or windows-1252 if the file is not UTF-8`,
            raw: stringifyJson(value).replace(/\\udc[89a-f][0-9a-f]/g, '\uFFFD'),
            position,
          };
          continue;
        }
        if (!isPlainObject(value)) {
          yield {
            kind: 'reject',
            line: records,
            code: 'not-an-object',
            reason: `array element ${records}: expected a JSON object, found ${describe(value)}`,
            raw: stringifyJson(value),
            position,
          };
          continue;
        }
        const key = unclaimed > 0 ? keyWrittenTwice(value, twice) : undefined;
        if (key !== undefined) {
          unclaimed -= 1;
          yield {
            kind: 'reject',
            line: records,
            code: 'duplicate-key',
            reason: `array element ${records}: ${duplicateReason(key)}`,
            raw: stringifyJson(value),
            position,
          };
          continue;
        }
        yield { kind: 'row', line: records, object: value, position };
      }
      if (syntaxError) throw syntaxError;
    } catch (err) {
      if (err instanceof CsvError) throw err;
      // stream-json says "has expected" when the input ran out, "cannot parse input" at a wrong byte.
      const truncated = /^Parser has expected/.test((err as Error).message);
      const where = await locateJsonError(input, toUtf8).catch(() => undefined);
      const at = where === undefined ? '' : where.atEnd ? ` at its end (${where.place})` : ` at ${where.place}`;
      const what = truncated ? 'the array is not closed: the file is truncated' : (err as Error).message.replace(/^Parser cannot parse input: /, '');
      const before =
        records === 0
          ? 'no element before it was read'
          : `the ${records} element${records === 1 ? '' : 's'} before it ${records === 1 ? 'is' : 'are'} written to the output`;
      throw new CsvError('invalid-json', `${options.path} is not valid JSON${at}: ${what}; ${before}`, { cause: err });
    } finally {
      elements.destroy();
      file.destroy();
    }
  }

  return { format: 'json', totalBytes: input.totalBytes, items: items(), close: async () => void elements.destroy() };
}

/**
 * A filter of UTF-8 input before {@link utf8Escaper}. The byte after a backslash that begins an
 * escape is the escape's letter; were it a byte that is not valid UTF-8, the escaper would write it
 * as `\udcXX`, the backslash before would escape that one's backslash, and the string would read
 * as the text "udcXX": a valid string made up, where the input is not even valid JSON. An `x` is
 * put after such a backslash, so the parser fails there as on any other character that is not an
 * escape letter (`\Ä`). Only input that is not valid UTF-8 is searched.
 */
function escapeLetterGuard(): (chunk: Buffer) => Buffer {
  let run = 0; // backslashes at the end of the input so far
  return (chunk) => {
    if (chunk.length === 0) return chunk;
    const before = run;
    run = trailingBackslashes(chunk, chunk.length);
    if (run === chunk.length) run += before;
    if (isUtf8(chunk) && (before % 2 === 0 || chunk[0]! < 0x80)) return chunk;
    const parts: Buffer[] = [];
    let from = 0;
    if (before % 2 === 1 && chunk[0]! >= 0x80) parts.push(NOT_AN_ESCAPE);
    for (let b = chunk.indexOf(0x5c); b !== -1 && b + 1 < chunk.length; b = chunk.indexOf(0x5c, b + 1)) {
      if (chunk[b + 1]! < 0x80) continue;
      const backslashes = trailingBackslashes(chunk, b + 1);
      if ((backslashes + (backslashes === b + 1 ? before : 0)) % 2 === 0) continue;
      parts.push(chunk.subarray(from, b + 1), NOT_AN_ESCAPE);
      from = b + 1;
    }
    if (parts.length === 0) return chunk;
    parts.push(chunk.subarray(from));
    return Buffer.concat(parts);
  };
}

const NOT_AN_ESCAPE = Buffer.from('x');

/** How many backslashes `bytes` holds just before `end`. */
function trailingBackslashes(bytes: Buffer, end: number): number {
  let i = end;
  while (i > 0 && bytes[i - 1] === 0x5c) i -= 1;
  return end - i;
}

/**
 * Whether an element holds a byte {@link utf8Escaper} escaped: in a string or a key, or in a value
 * a later one under the same key replaced (its object is in `replaced`). Walks a list, not the call
 * stack: an element may be nested as deep as the parser reads.
 */
/** Why a record with `key` twice in one object is rejected, and what to do. */
function duplicateReason(key: string): string {
  return `the key ${JSON.stringify(key)} is written twice in one object: JSON keeps only the last of its values, so the record could not come out as it came in; keep one of them and rerun`;
}

/** A key some object in `value` got twice (marked in `twice` as it was read), or undefined. */
function keyWrittenTwice(value: object, twice: WeakMap<object, string>): string | undefined {
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const next = todo.pop();
    if (next === null || typeof next !== 'object' || next instanceof JsonNumber) continue;
    const key = twice.get(next);
    if (key !== undefined) return key;
    if (Array.isArray(next)) for (const v of next) todo.push(v);
    else for (const v of Object.values(next)) todo.push(v);
  }
  return undefined;
}

function undecodable(value: unknown, replaced: WeakSet<object>): boolean {
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const next = todo.pop();
    if (typeof next === 'string') {
      if (hasEscapedBytes(next)) return true;
    } else if (next !== null && typeof next === 'object' && !(next instanceof JsonNumber)) {
      if (replaced.has(next)) return true;
      if (Array.isArray(next)) for (const v of next) todo.push(v);
      else
        for (const [key, v] of Object.entries(next)) {
          if (hasEscapedBytes(key)) return true;
          todo.push(v);
        }
    }
  }
  return false;
}

/** The parts of stream-json's assembler that are replaced above. */
interface Assembler {
  done: boolean;
  current: unknown;
  key: string | null;
  _saveValue(value: unknown): void;
  stringValue(value: unknown): void;
  numberValue(text: string): void;
}

/** Converts chunks of `encoding` to UTF-8 for the JSON parser (single-byte encodings chunk by chunk). */
function utf8Of(encoding: InputEncoding): (chunk: Buffer) => Buffer {
  if (encoding === 'utf8') return (chunk) => chunk;
  const decode = recordDecoder(encoding);
  return (chunk) => Buffer.from(decode(chunk) ?? '', 'utf8');
}

const JSON_SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Refuses a file whose first value is not an array (an object, NDJSON, nothing at all). The stream
 * may cut the byte order mark or the whitespace before the first value anywhere: the first bytes
 * wait until they tell whether a byte order mark starts the file, and lines are counted on.
 */
async function expectArray(path: string, input: InputBytes): Promise<void> {
  const stream = input.stream();
  let offset = 0; // of the chunk's first byte
  let line = 1;
  let head: Buffer | undefined = Buffer.alloc(0); // the first bytes, while they may be a cut byte order mark
  /** Whether `chunk` (from `from` on) opens the array; false when it holds only whitespace. */
  const opens = (chunk: Buffer, from: number): boolean => {
    let i = from;
    while (i < chunk.length && JSON_SPACE.has(chunk[i]!)) i++;
    line += countLf(chunk.subarray(from, i));
    if (i === chunk.length) return false;
    if (chunk[i] === 0x5b /* [ */) return true;
    const found = chunk[i] === 0x7b ? 'an object ({)' : `"${String.fromCharCode(chunk[i]!)}"`;
    const hint = chunk[i] === 0x7b ? '; if it holds one object per line, pass --format ndjson (or name it .ndjson)' : '';
    throw new CsvError(
      'invalid-json',
      `${path} is not a JSON array: at byte offset ${offset + i} (line ${line}) it starts with ${found}, a JSON input must be one array of objects [{...}, ...]${hint}`,
    );
  };
  try {
    for await (const read of stream as AsyncIterable<Buffer>) {
      let chunk = read;
      if (head) {
        head = Buffer.concat([head, read]);
        if (head.length < 3 && UTF8_BOM.subarray(0, head.length).equals(head)) continue;
        chunk = head;
        head = undefined;
        if (opens(chunk, bomLength(chunk))) return;
      } else if (opens(chunk, 0)) return;
      offset += chunk.length;
    }
    if (head && opens(head, 0)) return;
  } finally {
    stream.destroy();
  }
  throw new CsvError('invalid-json', `${path} holds no JSON value: a JSON input must be one array of objects [{...}, ...]`);
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Where a JSON syntax error is: `place` names the byte offset (and line); `atEnd` for a truncated file. */
interface JsonErrorPlace {
  readonly place: string;
  readonly atEnd: boolean;
}

/**
 * Finds where stream-json fails on the input (its error names what it expected, not where): the
 * input is parsed again in chunks to find the failing chunk, then once more feeding that chunk and
 * the bytes just before it a byte at a time (see {@link feed}). Runs only after a failure.
 */
async function locateJsonError(input: InputBytes, toUtf8: (chunk: Buffer) => Buffer): Promise<JsonErrorPlace | undefined> {
  const firstPass = await feed(input, toUtf8, Infinity);
  const found = firstPass.failedAt === undefined ? firstPass : await feed(input, toUtf8, firstPass.failedAt - HELD_BEFORE);
  if (firstPass.failedAt === undefined && !firstPass.atEnd) return undefined; // the parser alone finds nothing wrong
  const offset = input.utf16 ? '' : `byte offset ${found.offset}, `;
  // An error found only at the end is within the last 16 bytes: its line is not known exactly.
  return { place: found.atEnd ? `${offset.replace(/, $/, '')}` || 'its last bytes' : `${offset}line ${found.line}`, atEnd: found.atEnd };
}

interface FeedResult {
  /** Where the wrong character is (fed one byte at a time), or the bytes fed when the parser failed. */
  readonly offset: number;
  readonly line: number;
  readonly atEnd: boolean;
  /** Offset of the chunk during which the parser failed, when fed chunk by chunk. */
  readonly failedAt?: number;
}

/** Bytes before the failing chunk that are fed one at a time too: more than 17 characters take. */
const HELD_BEFORE = 128;

/**
 * Feeds the input to a fresh parser until it fails, the bytes from offset `oneByOneFrom` on one at
 * a time. Fed so, the parser stops at a character it cannot take yet and holds the text from there
 * on until it can tell (up to 16 more characters for "expected a value", 5 for "escaped
 * characters"), and that text may begin in an earlier chunk: when it fails, the text it holds
 * starts at the wrong character. Counting the UTF-16 units the parser was given (decoded as it
 * decodes them: a character outside the BMP is two, a byte that is not valid UTF-8 one U+FFFD)
 * places that character on its first byte.
 */
async function feed(input: InputBytes, toUtf8: (chunk: Buffer) => Buffer, oneByOneFrom: number): Promise<FeedResult> {
  const parser = Parser.make();
  const held = (): string => (parser as unknown as { _buffer: string })._buffer;
  parser.resume(); // tokens are not needed
  let failed = false;
  parser.on('error', () => (failed = true));
  const write = (bytes: Buffer) => new Promise<void>((resolve) => parser.write(bytes, () => resolve()));
  const decoder = new StringDecoder('utf8'); // as the parser's
  let units = 0; // UTF-16 units given to the parser
  let offset = 0;
  let line = 1;
  const whole = async (bytes: Buffer): Promise<void> => {
    const utf8 = toUtf8(bytes);
    units += decoder.write(utf8).length;
    await write(utf8);
    offset += bytes.length;
    line += countLf(bytes);
  };
  // Each byte fed alone: where it is, and the units given to the parser before it.
  const single: { readonly offset: number; readonly line: number; readonly units: number }[] = [];
  const oneByOne = async (bytes: Buffer): Promise<FeedResult | undefined> => {
    for (let i = 0; i < bytes.length; i++) {
      single.push({ offset, line, units });
      await whole(bytes.subarray(i, i + 1));
      if (!failed) continue;
      const start = units - held().length;
      const at = single.find((b) => b.units === start) ?? single[0]!;
      return { offset: at.offset, line: at.line, atEnd: false };
    }
    return undefined;
  };
  const stream = input.stream();
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const start = offset;
      if (start + chunk.length <= oneByOneFrom) {
        await whole(chunk);
        if (failed) return { offset, line, atEnd: false, failedAt: start };
      } else {
        const first = Math.max(0, oneByOneFrom - start);
        if (first > 0) await whole(chunk.subarray(0, first));
        const found = await oneByOne(chunk.subarray(first));
        if (found) return found;
      }
    }
  } finally {
    stream.destroy();
  }
  await new Promise<void>((resolve) => parser.end(() => resolve()));
  parser.destroy();
  return { offset, line, atEnd: failed };
}

function countLf(chunk: Buffer): number {
  let n = 0;
  for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) n += 1;
  return n;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonNumber);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (value instanceof JsonNumber) return 'a number';
  return `a ${typeof value}`;
}
