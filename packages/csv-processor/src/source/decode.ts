import { isUtf8 } from 'node:buffer';
import type { InputEncoding } from './types.js';

/** Decodes one record's bytes; `undefined` when the bytes are not valid in the encoding. */
export type RecordDecoder = (bytes: Buffer) => string | undefined;

/**
 * A decoder for `encoding`. Latin-1 and Windows-1252 decode every byte; UTF-8 refuses invalid
 * sequences so the record can be rejected instead of silently carrying U+FFFD into the output.
 */
export function recordDecoder(encoding: InputEncoding): RecordDecoder {
  switch (encoding) {
    case 'utf8':
      return (bytes) => (isUtf8(bytes) ? bytes.toString('utf8') : undefined);
    case 'latin1':
      // Buffer's latin1 is ISO-8859-1 proper; TextDecoder('latin1') would be Windows-1252.
      return (bytes) => bytes.toString('latin1');
    case 'windows-1252': {
      const decoder = new TextDecoder('windows-1252');
      return (bytes) => decoder.decode(bytes);
    }
  }
}

/** Decodes for display in the rejects file: never fails, bad bytes become U+FFFD. */
export function lossyDecode(bytes: Buffer, encoding: InputEncoding): string {
  return encoding === 'utf8' ? bytes.toString('utf8') : (recordDecoder(encoding)(bytes) ?? '');
}

/** Byte length of a UTF-8 byte order mark at the start of `bytes` (0 or 3). */
export function bomLength(bytes: Buffer): number {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
}
