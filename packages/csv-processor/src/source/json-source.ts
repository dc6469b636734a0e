import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';
import StreamArray from 'stream-json/streamers/StreamArray.js';
import { CsvError } from '../errors.js';
import { fileSize } from './csv-source.js';
import { bomLength, lossyDecode, recordDecoder } from './decode.js';
import { frameRecords } from './framer.js';
import type { InputEncoding, Source, SourceItem, SourceOptions, SourcePosition } from './types.js';

const READ_CHUNK = 256 * 1024; // bytes

/** Opens an NDJSON file: one JSON object per line; other lines are rejected with their number. */
export async function openNdjsonSource(options: SourceOptions): Promise<Source> {
  const encoding = options.encoding ?? 'utf8';
  const decode = recordDecoder(encoding);
  const totalBytes = await fileSize(options.path);
  const start = options.start;
  const stream = createReadStream(options.path, { start: start?.offset ?? 0, highWaterMark: READ_CHUNK });
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
        const bytes = record.nextOffset - record.bytes.length <= 3 ? record.bytes.subarray(bomLength(record.bytes)) : record.bytes;
        const raw = () => lossyDecode(bytes, encoding);
        const text = decode(bytes);
        if (text === undefined) {
          yield { kind: 'reject', line: record.line, code: 'undecodable-bytes', reason: 'bytes that are not valid UTF-8; pass --encoding latin1 or windows-1252 if the file is not UTF-8', raw: raw(), position };
          continue;
        }
        let value: unknown;
        try {
          value = JSON.parse(text);
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
 * Element numbers (1-based) stand in for line numbers. A syntax error ends the read with
 * `invalid-json`: unlike lines, array elements cannot be found again after one.
 */
export async function openJsonArraySource(options: SourceOptions): Promise<Source> {
  const encoding = options.encoding ?? 'utf8';
  const totalBytes = await fileSize(options.path);
  const skip = options.start?.records ?? 0;
  const file = createReadStream(options.path, { highWaterMark: READ_CHUNK });
  let bytesRead = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytesRead += chunk.length;
      done(null, encoding === 'utf8' ? chunk : Buffer.from(decodeSingleByte(chunk, encoding), 'utf8'));
    },
  });
  const elements = file.pipe(counted).pipe(StreamArray.withParser());
  file.on('error', (err) => elements.destroy(err));

  async function* items(): AsyncGenerator<SourceItem> {
    let records = 0;
    try {
      for await (const { value } of elements as AsyncIterable<{ key: number; value: unknown }>) {
        records += 1;
        if (records <= skip) continue;
        const position: SourcePosition = { records, offset: bytesRead, line: records + 1 };
        if (!isPlainObject(value)) {
          yield { kind: 'reject', line: records, code: 'not-an-object', reason: `array element ${records}: expected a JSON object, found ${describe(value)}`, raw: JSON.stringify(value) ?? '', position };
          continue;
        }
        yield { kind: 'row', line: records, object: value, position };
      }
    } catch (err) {
      throw new CsvError('invalid-json', `${options.path} is not a valid JSON array after element ${records}: ${(err as Error).message}`, { cause: err });
    } finally {
      elements.destroy();
      file.destroy();
    }
  }

  return { format: 'json', totalBytes, items: items(), close: async () => void elements.destroy() };
}

function decodeSingleByte(chunk: Buffer, encoding: InputEncoding): string {
  return recordDecoder(encoding)(chunk) ?? '';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return `a ${typeof value}`;
}
