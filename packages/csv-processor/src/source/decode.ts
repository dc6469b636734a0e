import { isAscii, isUtf8 } from 'node:buffer';
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

/** What {@link utf8Evidence} found: the line and the word of the first character beyond ASCII. */
export interface Utf8Evidence {
  readonly line: number;
  readonly word: Buffer;
}

/**
 * Whether `sample`, the start of an input to be read as Latin-1 or Windows-1252, is UTF-8 instead:
 * it starts with a UTF-8 byte order mark (and is valid UTF-8), or it is valid UTF-8 throughout (a
 * sequence cut off by its end aside) and holds at least one letter, mark or sign of Western text
 * beyond ASCII (U+00A0-U+024F, combining accents, Latin Extended Additional, general punctuation,
 * €, ™), as `ü` is the two bytes C3 BC, and no C1 control character. Read in a single-byte
 * encoding every such character would come out as two or three (`Ã¼`): sent to the platform and
 * written so. Text really in Latin-1 or Windows-1252 is not valid UTF-8 as soon as one accented
 * letter is followed by a plain one (`ü` then `n` is FC 6E), and a rare run of bytes that is
 * (`ß` before a no-break space, DF A0) decodes to a character of another script: a sample holding
 * only such runs is not taken for UTF-8.
 */
export function utf8Evidence(sample: Buffer): Utf8Evidence | undefined {
  const text = sample.subarray(0, incompleteTail(sample));
  const bom = bomLength(text) > 0;
  const first = bom ? 0 : text.findIndex((b) => b >= 0x80);
  if (first === -1 || !isUtf8(text)) return undefined;
  if (!bom) {
    let western = false;
    for (const c of text.toString('utf8')) {
      const code = c.codePointAt(0)!;
      if (code >= 0x80 && code <= 0x9f) return undefined;
      western ||= isWestern(code);
    }
    if (!western) return undefined;
  }
  const isBreak = (b: number) => b === 0x0a || b === 0x0d || b === 0x20 || b === 0x22 || b === 0x2c || b === 0x3b || b === 0x09 || b === 0x7c;
  let from = first;
  while (from > 0 && !isBreak(text[from - 1]!) && first - from < 40) from--;
  let to = first;
  while (to < text.length && !isBreak(text[to]!) && to - first < 40) to++;
  // Not cut inside a character.
  while (to < text.length && (text[to]! & 0xc0) === 0x80) to++;
  let line = 1;
  for (let i = text.indexOf(0x0a); i !== -1 && i < first; i = text.indexOf(0x0a, i + 1)) line++;
  return { line, word: text.subarray(from, to) };
}

/** Looks at the records of an input read as Latin-1 or Windows-1252, in order: see {@link laterUtf8Watch}. */
export type Utf8Watch = (record: Buffer, cut?: boolean) => Utf8Evidence | undefined;

/**
 * For an input read as Latin-1 or Windows-1252 whose start (`sample`, the bytes {@link utf8Evidence}
 * looked at) is plain ASCII, a watch of its records that finds UTF-8 where it first shows, after
 * the sample: the first record holding bytes beyond ASCII is UTF-8 when it is valid UTF-8 holding
 * Western text and no C1 control, as the sample would have been. Every record before it is plain
 * ASCII, the same in either encoding. That first record decides: once it is seen (UTF-8 or not)
 * the watch looks at nothing more, and before it each record costs one ASCII test.
 * `undefined` when the sample holds bytes beyond ASCII: it decided already.
 */
export function laterUtf8Watch(sample: Buffer): Utf8Watch | undefined {
  if (!isAscii(sample.subarray(0, incompleteTail(sample)))) return undefined;
  let watching = true;
  // `cut`: the record's first bytes only (a record too large to keep), maybe cut inside a character.
  return (record, cut = false) => {
    if (!watching) return undefined;
    const bytes = cut ? record.subarray(0, incompleteTail(record)) : record;
    if (isAscii(bytes)) return undefined;
    watching = false;
    return isUtf8(bytes) ? utf8Evidence(bytes) : undefined;
  };
}

/**
 * A letter, mark or sign of Western text beyond ASCII: Latin-1 Supplement and Latin Extended-A/B,
 * combining accents (text in decomposed form), Latin Extended Additional, general punctuation, €, ™.
 * (A C1 control, U+0080-U+009F, is never in text: it is what Windows-1252's Â before one of
 * € ‚ ƒ „ … † ‡ ˆ ‰ Š ‹ Œ Ž ‘ ’ “ ” • – — ˜ ™ š › œ ž Ÿ decodes to as UTF-8.)
 */
function isWestern(code: number): boolean {
  return (
    (code >= 0xa0 && code <= 0x24f) ||
    (code >= 0x300 && code <= 0x36f) ||
    (code >= 0x1e00 && code <= 0x1eff) ||
    (code >= 0x2010 && code <= 0x205e) ||
    code === 0x20ac ||
    code === 0x2122
  );
}

/**
 * A stream filter for UTF-8 text fed to the JSON array parser, which would silently decode a byte
 * that is not valid UTF-8 as U+FFFD. Each such byte is written instead as the JSON escape of a lone
 * low surrogate, U+DC80-U+DCFF, carrying the byte (as Python's "surrogateescape" does): inside a
 * string it parses to a character no valid UTF-8 gives, so {@link hasEscapedBytes} finds the
 * element and it is rejected as `undecodable-bytes`, as a CSV or NDJSON record is; outside a
 * string it is a syntax error, as the bad byte is. Valid text (nearly every chunk) is passed
 * through as it is; a sequence cut by the chunk's end waits for the next chunk.
 */
export function utf8Escaper(): { push(chunk: Buffer): Buffer; end(): Buffer; readonly escaped: number } {
  let carry: Buffer = Buffer.alloc(0);
  let escaped = 0;
  const escape = (bytes: Buffer): Buffer => {
    if (isUtf8(bytes)) return bytes;
    const out: Buffer[] = [];
    let from = 0;
    for (let i = 0; i < bytes.length;) {
      const n = sequenceLength(bytes, i);
      if (n > 0) {
        i += n;
        continue;
      }
      out.push(bytes.subarray(from, i), Buffer.from(`\\udc${bytes[i]!.toString(16)}`, 'latin1'));
      escaped += 1;
      i += 1;
      from = i;
    }
    out.push(bytes.subarray(from));
    return Buffer.concat(out);
  };
  return {
    push(chunk) {
      const bytes = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
      const cut = incompleteTail(bytes);
      carry = Buffer.from(bytes.subarray(cut));
      return escape(bytes.subarray(0, cut));
    },
    end() {
      const rest = escape(carry);
      carry = Buffer.alloc(0);
      return rest;
    },
    get escaped() {
      return escaped;
    },
  };
}

/** Whether a parsed JSON value holds a byte {@link utf8Escaper} escaped, in a key or a string. */
export function hasEscapedBytes(value: unknown): boolean {
  if (typeof value === 'string') return ESCAPED_BYTE.test(value);
  if (Array.isArray(value)) return value.some(hasEscapedBytes);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(([key, v]) => ESCAPED_BYTE.test(key) || hasEscapedBytes(v));
  }
  return false;
}

const ESCAPED_BYTE = /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/;

/** Where a UTF-8 sequence cut off by the end of `bytes` starts (`bytes.length` when none is). */
function incompleteTail(bytes: Buffer): number {
  for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 3); i--) {
    const b = bytes[i]!;
    if (b < 0x80) return bytes.length;
    if (b >= 0xc0) return i + leadLength(b) > bytes.length ? i : bytes.length;
  }
  return bytes.length;
}

function leadLength(b: number): number {
  return b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
}

/** Length of the valid UTF-8 sequence at bytes[i], 0 when it is not valid (RFC 3629 ranges). */
function sequenceLength(bytes: Buffer, i: number): number {
  const b = bytes[i]!;
  if (b < 0x80) return 1;
  if (b < 0xc2 || b > 0xf4) return 0;
  const n = leadLength(b);
  if (i + n > bytes.length) return 0;
  const second = bytes[i + 1]!;
  const [lo, hi] = b === 0xe0 ? [0xa0, 0xbf] : b === 0xed ? [0x80, 0x9f] : b === 0xf0 ? [0x90, 0xbf] : b === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
  if (second < lo || second > hi) return 0;
  for (let k = 2; k < n; k++) if ((bytes[i + k]! & 0xc0) !== 0x80) return 0;
  return n;
}
