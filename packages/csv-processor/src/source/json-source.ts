import { Transform } from 'node:stream';
import { pipeline } from 'node:stream';
import Parser from 'stream-json/Parser.js';
import StreamArray from 'stream-json/streamers/StreamArray.js';
import { CsvError } from '../errors.js';
import { fileSize, tooLargeReason } from './csv-source.js';
import { bomLength, hasEscapedBytes, lossyDecode, recordDecoder, utf8Escaper } from './decode.js';
import { frameRecords } from './framer.js';
import { inputBytes, type InputBytes } from './input-bytes.js';
import { jsonNumber, JsonNumber, parseJson, stringifyJson } from './lossless-json.js';
import type { InputEncoding, Source, SourceItem, SourceOptions, SourcePosition } from './types.js';

/** Opens an NDJSON file: one JSON object per line; other lines are rejected with their number. */
export async function openNdjsonSource(options: SourceOptions): Promise<Source> {
  const input = await inputBytes(options.path, options.encoding ?? 'utf8', await fileSize(options.path));
  const { encoding, totalBytes } = input;
  const decode = recordDecoder(encoding);
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
        const bytes = record.nextOffset - record.bytes.length <= 3 ? record.bytes.subarray(bomLength(record.bytes)) : record.bytes;
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
  const input = await inputBytes(options.path, options.encoding ?? 'utf8', await fileSize(options.path));
  const toUtf8 = utf8Of(input.encoding);
  await expectArray(options.path, input);
  const skip = options.start?.records ?? 0;
  const file = input.stream();
  let bytesRead = 0;
  // Bytes that are not valid UTF-8 reach the parser escaped, so their element can be rejected
  // (utf8Escaper); other encodings decode every byte.
  const escaper = input.encoding === 'utf8' ? utf8Escaper() : undefined;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytesRead += chunk.length;
      done(null, escaper ? escaper.push(chunk) : toUtf8(chunk));
    },
    flush(done) {
      const rest = escaper?.end();
      done(null, rest && rest.length > 0 ? rest : undefined);
    },
  });
  const elements = StreamArray.make();
  // The assembler stores each key as an own property (defineProperty: `"__proto__"` is a key like
  // any other, not the object's prototype), and numbers as written (lossless-json.ts): it would
  // parseFloat them.
  const assembler = (elements as unknown as { _assembler: Assembler })._assembler;
  const save = (value: unknown): void => {
    if (assembler.done) assembler.current = value;
    else if (Array.isArray(assembler.current)) assembler.current.push(value);
    else {
      Object.defineProperty(assembler.current, assembler.key!, { value, enumerable: true, writable: true, configurable: true });
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
        if (escaper && escaper.escaped > 0 && hasEscapedBytes(value)) {
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
        yield { kind: 'row', line: records, object: value, position };
      }
      if (syntaxError) throw syntaxError;
    } catch (err) {
      if (err instanceof CsvError) throw err;
      // stream-json says "has expected" when the input ran out, "cannot parse input" at a wrong byte.
      const truncated = /^Parser has expected/.test((err as Error).message);
      const where = await locateJsonError(input, toUtf8, lookahead((err as Error).message)).catch(() => undefined);
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

/** Refuses a file whose first value is not an array (an object, NDJSON, nothing at all). */
async function expectArray(path: string, input: InputBytes): Promise<void> {
  const stream = input.stream();
  let offset = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let i = offset === 0 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0;
      while (i < chunk.length && JSON_SPACE.has(chunk[i]!)) i++;
      if (i < chunk.length) {
        if (chunk[i] === 0x5b /* [ */) return;
        const found = chunk[i] === 0x7b ? 'an object ({)' : `"${String.fromCharCode(chunk[i]!)}"`;
        const hint = chunk[i] === 0x7b ? '; if it holds one object per line, pass --format ndjson (or name it .ndjson)' : '';
        throw new CsvError(
          'invalid-json',
          `${path} is not a JSON array: at byte offset ${offset + i} (line ${lineAt(chunk, i)}) it starts with ${found}, a JSON input must be one array of objects [{...}, ...]${hint}`,
        );
      }
      offset += chunk.length;
    }
  } finally {
    stream.destroy();
  }
  throw new CsvError('invalid-json', `${path} holds no JSON value: a JSON input must be one array of objects [{...}, ...]`);
}

function lineAt(chunk: Buffer, index: number): number {
  let line = 1;
  for (let i = chunk.indexOf(0x0a); i !== -1 && i < index; i = chunk.indexOf(0x0a, i + 1)) line += 1;
  return line;
}

/** Where a JSON syntax error is: `place` names the byte offset (and line); `atEnd` for a truncated file. */
interface JsonErrorPlace {
  readonly place: string;
  readonly atEnd: boolean;
}

/**
 * Characters stream-json reads past a wrong one before it reports `message`: it decides "expected a
 * value" only once it holds 16 more characters, "escaped characters" 5 more, the rest at once.
 */
function lookahead(message: string): number {
  if (message.endsWith('expected a value')) return 17;
  if (message.endsWith('escaped characters')) return 6;
  return 1;
}

/**
 * Finds where stream-json fails on the input (its error names what it expected, not where): the
 * input is parsed again in chunks to find the failing chunk, then once more feeding that chunk a
 * byte at a time, and the offset is taken back by the characters the parser read past the wrong
 * one (`behind`). Runs only after a failure.
 */
async function locateJsonError(input: InputBytes, toUtf8: (chunk: Buffer) => Buffer, behind: number): Promise<JsonErrorPlace | undefined> {
  const firstPass = await feed(input, toUtf8, Infinity, behind);
  const found = firstPass.failedChunk === undefined ? firstPass : await feed(input, toUtf8, firstPass.failedChunk, behind);
  if (firstPass.failedChunk === undefined && !firstPass.atEnd) return undefined; // the parser alone finds nothing wrong
  const offset = input.utf16 ? '' : `byte offset ${found.offset}, `;
  // An error found only at the end is within the last 16 bytes: its line is not known exactly.
  return { place: found.atEnd ? `${offset.replace(/, $/, '')}` || 'its last bytes' : `${offset}line ${found.line}`, atEnd: found.atEnd };
}

interface FeedResult {
  /** Bytes fed when the parser failed (or all of them). */
  readonly offset: number;
  readonly line: number;
  readonly atEnd: boolean;
  /** Index of the chunk during which the parser failed, when fed chunk by chunk. */
  readonly failedChunk?: number;
}

/**
 * Feeds the input to a fresh parser, chunk `byteWise` one byte at a time, until it fails; a failure
 * there is placed `behind` characters before the byte that made the parser fail.
 */
async function feed(input: InputBytes, toUtf8: (chunk: Buffer) => Buffer, byteWise: number, behind: number): Promise<FeedResult> {
  const parser = Parser.make();
  parser.resume(); // tokens are not needed
  let failed = false;
  parser.on('error', () => (failed = true));
  const write = (bytes: Buffer) => new Promise<void>((resolve) => parser.write(bytes, () => resolve()));
  const stream = input.stream();
  let offset = 0;
  let line = 1;
  let index = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (index === byteWise) {
        // One input byte is one character, except UTF-8 continuation bytes (10xxxxxx).
        const multiByte = input.encoding === 'utf8';
        for (let i = 0; i < chunk.length; i++) {
          await write(toUtf8(chunk.subarray(i, i + 1)));
          if (!failed) continue;
          // (a wrong character up to 16 before this chunk's start is placed at its start)
          let at = i + 1;
          for (let chars = 0; chars < behind && at > 0;) {
            at -= 1;
            if (!multiByte || (chunk[at]! & 0xc0) !== 0x80) chars += 1;
          }
          return { offset: offset + at, line: line + countLf(chunk.subarray(0, at)), atEnd: false };
        }
        offset += chunk.length;
        line += countLf(chunk);
      } else {
        await write(toUtf8(chunk));
        if (failed) return { offset, line, atEnd: false, failedChunk: index };
        offset += chunk.length;
        line += countLf(chunk);
      }
      index += 1;
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
