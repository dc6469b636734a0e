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
    case 'windows-1252':
      return decodeWindows1252;
  }
}

// Bytes 0x80-0x9F of Windows-1252 (the WHATWG table: an unassigned byte stays its C1 control).
// Node 20's TextDecoder('windows-1252') decodes them as Latin-1 (0x80 as U+0080, not €), so the
// table is applied here: every other byte is the same in both.
const CP1252_HIGH = '€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008DŽ\u008F\u0090‘’“”•–—˜™š›œ\u009DžŸ';

function decodeWindows1252(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/[\u0080-\u009f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]!);
}

/** Decodes for display in the rejects file: never fails, bad bytes become U+FFFD. */
export function lossyDecode(bytes: Buffer, encoding: InputEncoding): string {
  return encoding === 'utf8' ? bytes.toString('utf8') : (recordDecoder(encoding)(bytes) ?? '');
}

/** Byte length of a UTF-8 byte order mark at the start of `bytes` (0 or 3). */
export function bomLength(bytes: Buffer): number {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
}
