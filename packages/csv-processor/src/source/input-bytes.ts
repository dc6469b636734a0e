import { isAscii } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { PassThrough, Readable, Transform } from 'node:stream';
import { constants as zlibConstants, createGunzip, gunzipSync } from 'node:zlib';
import { CsvError } from '../errors.js';
import { bomLength, laterUtf8Watch, recordDecoder, utf8Evidence, type Utf8Evidence, type Utf8Watch } from './decode.js';
import type { InputEncoding } from './types.js';

/** A UTF-16 input, told by its byte order mark. */
export type Utf16 = 'utf-16le' | 'utf-16be';

/** The first `length` bytes of the file at `path`, or of `file` when given (fewer when it is shorter). */
async function readHead(path: string, length: number, file?: FileHandle): Promise<Buffer> {
  if (file) return readAt(file, length, 0);
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    throw new CsvError('input-unreadable', `cannot read the input ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  try {
    const head = Buffer.alloc(length);
    const { bytesRead } = await handle.read(head, 0, length, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** The UTF-16 flavour of text starting with `head` when it starts with a UTF-16 byte order mark. */
function utf16Of(head: Buffer): Utf16 | undefined {
  if (head.length < 2) return undefined;
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return undefined;
}

/** Whether a file starting with `head` is gzip-compressed (RFC 1952 magic bytes). */
const isGzip = (head: Buffer): boolean => head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;

/** The UTF-16 flavour of the file at `path` when it starts with a UTF-16 byte order mark. */
export async function detectUtf16(path: string): Promise<Utf16 | undefined> {
  return utf16Of(await readHead(path, 2));
}

/** How a source reads its file: the encoding its records are in, and a stream of those bytes. */
export interface InputBytes {
  /** Encoding of the bytes `stream` delivers (UTF-8 for a transcoded UTF-16 file). */
  readonly encoding: InputEncoding;
  /** Set when the file is UTF-16: its text is delivered as UTF-8. */
  readonly utf16?: Utf16;
  /** Set when the file is gzip-compressed: its text is delivered decompressed. */
  readonly gzip?: true;
  /**
   * The bytes from `start` on. Offsets are in the file, except for UTF-16, where they are in its
   * UTF-8 text, and for gzip, where they are in the decompressed text (the file is read from its
   * start again and that many bytes skipped).
   */
  stream(start?: number): Readable;
  /** Input size for progress: the file's, or an estimate of its text (UTF-16: its UTF-8; gzip: decompressed). */
  readonly totalBytes: number;
  /**
   * Set when the input is read as Latin-1 or Windows-1252 and its first 64 KiB are plain ASCII: a
   * watch for one read of its records, in order, that finds UTF-8 further on ({@link laterUtf8Watch};
   * the source refuses it with {@link laterUtf8Refusal}).
   */
  readonly utf8Watch?: () => Utf8Watch;
}

const READ_CHUNK = 256 * 1024; // bytes

/** Up to `length` bytes of `file` from `position` (fewer at its end). */
async function readAt(file: FileHandle, length: number, position: number): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(length); // only the bytes read are handed out
  const { bytesRead } = await file.read(bytes, 0, length, position);
  return bytes.subarray(0, bytesRead);
}

/**
 * The bytes of `file` from `start` on, read at their offsets: any number of these streams read one
 * handle, none moving another's place.
 */
function readFrom(file: FileHandle, start: number): Readable {
  let position = start;
  return new Readable({
    highWaterMark: READ_CHUNK,
    read() {
      readAt(file, READ_CHUNK, position).then(
        (bytes) => {
          position += bytes.length;
          this.push(bytes.length > 0 ? bytes : null);
        },
        (err: unknown) => this.destroy(err as Error),
      );
    },
  });
}

/**
 * Opens the input's bytes. A gzip-compressed file (`.csv.gz`, told by its first bytes, not its
 * name) is read decompressed, its offsets in the decompressed text (README "Compressed input"). A
 * file (or decompressed text) with a UTF-16 byte order mark (LE or BE) is transcoded to UTF-8
 * whatever `encoding` says, character for character (the mark itself is dropped); any other file
 * is read as it is, in `encoding`. `file`: the run's open handle of the input, which every read
 * then goes through, so that a file renamed over `path` meanwhile is never read (README "Input");
 * without it each stream opens `path`.
 */
export async function inputBytes(path: string, encoding: InputEncoding, fileSize: number, file?: FileHandle): Promise<InputBytes> {
  const bytes = (start: number): Readable => (file ? readFrom(file, start) : createReadStream(path, { start, highWaterMark: READ_CHUNK }));
  const head = await readHead(path, 64 * 1024, file);
  const gzip = isGzip(head);
  const text = gzip ? gunzipHead(path, head) : head;
  refuseOtherContainer(path, text, gzip);
  const utf16 = utf16Of(text);
  if (!utf16 && encoding !== 'utf8') refuseUtf8(path, encoding, text);
  const watched = !utf16 && encoding !== 'utf8' && laterUtf8Watch(text) !== undefined;
  const utf8Watch = watched ? { utf8Watch: () => laterUtf8Watch(text)! } : {};
  if (!gzip && !utf16) {
    return { encoding, totalBytes: fileSize, stream: (start = 0) => bytes(start), ...utf8Watch };
  }
  // The whole text is read from its start on every open, and `start` bytes of it skipped.
  const whole = (): Readable => (gzip ? gunzipped(path, bytes(0)) : bytes(0));
  const size = gzip ? await gunzippedSize(path, fileSize, file) : fileSize;
  if (!utf16) return { encoding, gzip: true, totalBytes: size, stream: (start = 0) => skipping(whole(), start), ...utf8Watch };
  return {
    encoding: 'utf8',
    utf16,
    ...(gzip ? { gzip: true } : {}),
    totalBytes: Math.round(size / 2), // exact for ASCII text
    stream: (start = 0) => {
      const source = whole();
      const transcode = utf16ToUtf8(path, utf16, start);
      source.on('error', (err) => transcode.destroy(err));
      return source.pipe(transcode);
    },
  };
}

/** Files that are not text, told by their first bytes: what the input is when it starts so, and what to do. */
const NOT_TEXT: readonly { magic: Buffer; what: string; todo: string }[] = [
  { magic: Buffer.from('PK\x03\x04', 'latin1'), what: 'a zip archive (an Excel .xlsx workbook is one too)', todo: 'unzip it, or save the sheet as CSV' },
  { magic: Buffer.from('PK\x05\x06', 'latin1'), what: 'an empty zip archive', todo: 'unzip it, or save the sheet as CSV' },
  { magic: Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), what: 'an Excel 97-2003 workbook (.xls)', todo: 'save the sheet as CSV' },
  { magic: Buffer.from('BZh', 'latin1'), what: 'bzip2-compressed', todo: 'decompress it (bunzip2), or compress it with gzip' },
  { magic: Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]), what: 'xz-compressed', todo: 'decompress it (unxz), or compress it with gzip' },
  { magic: Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), what: 'zstd-compressed', todo: 'decompress it (unzstd), or compress it with gzip' },
  { magic: Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]), what: 'a 7-Zip archive', todo: 'extract it' },
];

/**
 * Refuses an input (`head`: its first bytes, decompressed when it is gzip) that is an archive, a
 * workbook or compressed otherwise than with gzip: read as text it would fail as if it were text
 * in another encoding (its bytes hold NULs, as UTF-16 does), and that advice does not help.
 */
function refuseOtherContainer(path: string, head: Buffer, gzip: boolean): void {
  // `BZh` is also how a text could start: bzip2's block size digit and block magic must follow.
  const found = NOT_TEXT.find(
    ({ magic }) => head.subarray(0, magic.length).equals(magic) && (magic.length > 3 || /^BZh[1-9]1AY&SY/.test(head.subarray(0, 10).toString('latin1'))),
  );
  if (!found) return;
  throw new CsvError(
    'input-unreadable',
    `the input ${path} is ${gzip ? 'gzip-compressed, and what it holds is ' : ''}${found.what}, not CSV, JSON or NDJSON text: dq-csv reads text, plain or gzip-compressed; ${found.todo} and pass the file it gives`,
  );
}

/**
 * Refuses an input read as Latin-1 or Windows-1252 whose start (`sample`, decompressed) is UTF-8
 * ({@link utf8Evidence}): every ü would be paid for and written as Ã¼. Nothing is read further.
 */
function refuseUtf8(path: string, encoding: InputEncoding, sample: Buffer): void {
  const found = utf8Evidence(sample);
  if (!found) return;
  const what = bomLength(sample) > 0 ? 'starts with a UTF-8 byte order mark' : isUtf8Text(encoding, found, found.line);
  throw new CsvError('input-unreadable', `the input ${path} ${what}; leave out --encoding (UTF-8 is the default); nothing was written or paid for`);
}

/**
 * The refusal of an input read as Latin-1 or Windows-1252 whose first bytes beyond ASCII, at `line`
 * after a plain ASCII start, are UTF-8 ({@link laterUtf8Watch}). The records before it are the
 * same in UTF-8: the run writes and checkpoints them, and a resume in UTF-8 goes on from this one
 * (a resume may change the encoding over a plain ASCII start, see {@link asciiBefore}).
 */
export function laterUtf8Refusal(path: string, encoding: InputEncoding, found: Utf8Evidence, line: number): CsvError {
  return new CsvError(
    'input-unreadable',
    `the input ${path} ${isUtf8Text(encoding, found, line)}; the lines before it are plain ASCII, the same in UTF-8: rerun with --encoding utf8 --resume in place of --encoding ${encoding} (the other options as they are) to go on from line ${line}, without writing or paying for those lines again`,
  );
}

/** What a UTF-8 input read as `encoding` is, told by a word of it found at `line`. */
const isUtf8Text = (encoding: InputEncoding, found: Utf8Evidence, line: number): string =>
  `is UTF-8, not ${encoding}: line ${line} holds "${found.word.toString('utf8')}", which read as ${encoding} would be "${shown(recordDecoder(encoding)(found.word) ?? '')}" (sent to the platform and written so)`;

/**
 * Whether the input's text (decompressed; UTF-16 transcoded) is plain ASCII before `offset`, where
 * Latin-1, Windows-1252 and UTF-8 read the same records: a resume may change `--encoding` then.
 */
export async function asciiBefore(path: string, offset: number, fileSize: number, file?: FileHandle): Promise<boolean> {
  if (offset === 0) return true;
  const stream = (await inputBytes(path, 'utf8', fileSize, file)).stream(0);
  let seen = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const part = chunk.subarray(0, offset - seen);
      if (!isAscii(part)) return false;
      seen += part.length;
      if (seen >= offset) return true;
    }
    return false; // shorter than the checkpoint says
  } finally {
    stream.destroy();
  }
}

/** `text` for a message: control characters (Latin-1's 0x80-0x9F are C1 controls) as `\u009f`. */
const shown = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** The decompressed start of a gzip file whose first bytes are `head` (as much as they give). */
function gunzipHead(path: string, head: Buffer): Buffer {
  try {
    return gunzipSync(head, { finishFlush: zlibConstants.Z_SYNC_FLUSH });
  } catch (err) {
    throw gzipDamaged(path, err);
  }
}

/** The text of the file at `path` (its bytes `file`), decompressed; damaged or cut-off gzip data fails the stream with a clear error. */
function gunzipped(path: string, file: Readable): Readable {
  const gunzip = createGunzip({ chunkSize: READ_CHUNK });
  file.on('error', (err) => gunzip.destroy(err));
  const out = new PassThrough({ highWaterMark: READ_CHUNK });
  gunzip.on('error', (err) => out.destroy((err as NodeJS.ErrnoException).code?.startsWith('Z_') ? gzipDamaged(path, err) : err));
  return file.pipe(gunzip).pipe(out);
}

function gzipDamaged(path: string, cause: unknown): CsvError {
  const what =
    (cause as NodeJS.ErrnoException).code === 'Z_BUF_ERROR'
      ? 'ends in the middle of its compressed data (cut off?)'
      : `holds damaged gzip data (${(cause as Error).message})`;
  return new CsvError('input-unreadable', `the input ${path} is gzip-compressed but ${what}; fetch or compress it again`, { cause });
}

/**
 * The decompressed size of a gzip file, for progress: its trailer's size field (the size modulo
 * 2^32, of the last member), or the compressed size when that is clearly not it.
 */
async function gunzippedSize(path: string, fileSize: number, file?: FileHandle): Promise<number> {
  if (fileSize < 18) return fileSize;
  const handle = file ?? (await open(path, 'r'));
  try {
    const tail = await readAt(handle, 4, fileSize - 4);
    if (tail.length < 4) return fileSize;
    const size = tail.readUInt32LE(0);
    return size >= fileSize ? size : fileSize;
  } finally {
    if (!file) await handle.close();
  }
}

/** `stream` without its first `skip` bytes. */
function skipping(stream: Readable, skip: number): Readable {
  if (skip === 0) return stream;
  let toSkip = skip;
  const cut = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (toSkip >= chunk.length) {
        toSkip -= chunk.length;
        return done();
      }
      const rest = chunk.subarray(toSkip);
      toSkip = 0;
      done(null, rest);
    },
  });
  stream.on('error', (err) => cut.destroy(err));
  return stream.pipe(cut);
}

/** A transform from UTF-16 bytes to UTF-8 that drops the first `skip` bytes of its output. */
function utf16ToUtf8(path: string, utf16: Utf16, skip: number): Transform {
  const decoder = new TextDecoder(utf16, { fatal: true });
  let inputBytes = 0;
  let toSkip = skip;
  const fail = (err: unknown) =>
    new CsvError(
      'input-unreadable',
      `${path} starts with a ${utf16.toUpperCase()} byte order mark but is not valid ${utf16.toUpperCase()} within its first ${inputBytes} bytes (an odd byte count or a lone surrogate); save it again as UTF-8 or UTF-16`,
      { cause: err },
    );
  const out = (text: string, push: (b: Buffer) => void) => {
    let bytes = Buffer.from(text, 'utf8');
    if (toSkip > 0) {
      const cut = Math.min(toSkip, bytes.length);
      bytes = bytes.subarray(cut);
      toSkip -= cut;
    }
    if (bytes.length > 0) push(bytes);
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      inputBytes += chunk.length;
      try {
        out(decoder.decode(chunk, { stream: true }), (b) => this.push(b));
        done();
      } catch (err) {
        done(fail(err));
      }
    },
    flush(done) {
      try {
        out(decoder.decode(), (b) => this.push(b));
        done();
      } catch (err) {
        done(fail(err));
      }
    },
  });
}
