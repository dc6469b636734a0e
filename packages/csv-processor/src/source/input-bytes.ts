import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Transform, type Readable } from 'node:stream';
import { CsvError } from '../errors.js';
import type { InputEncoding } from './types.js';

/** A UTF-16 input, told by its byte order mark. */
export type Utf16 = 'utf-16le' | 'utf-16be';

/** The UTF-16 flavour of the file at `path` when it starts with a UTF-16 byte order mark. */
export async function detectUtf16(path: string): Promise<Utf16 | undefined> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    throw new CsvError('input-unreadable', `cannot read the input ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    if (bytesRead < 2) return undefined;
    if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
    if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
    return undefined;
  } finally {
    await handle.close();
  }
}

/** How a source reads its file: the encoding its records are in, and a stream of those bytes. */
export interface InputBytes {
  /** Encoding of the bytes `stream` delivers (UTF-8 for a transcoded UTF-16 file). */
  readonly encoding: InputEncoding;
  /** Set when the file is UTF-16: its text is delivered as UTF-8. */
  readonly utf16?: Utf16;
  /**
   * The bytes from `start` on. Offsets are in the file for every encoding but UTF-16, where they
   * are in its UTF-8 text (the file is read from its start again and that many bytes skipped).
   */
  stream(start?: number): Readable;
  /** Input size for progress: the file's, or for UTF-16 an estimate of its UTF-8 text. */
  readonly totalBytes: number;
}

const READ_CHUNK = 256 * 1024; // bytes

/**
 * Opens the input's bytes. A file with a UTF-16 byte order mark (LE or BE) is transcoded to UTF-8
 * whatever `encoding` says, character for character (the mark itself is dropped); any other file
 * is read as it is, in `encoding`.
 */
export async function inputBytes(path: string, encoding: InputEncoding, fileSize: number): Promise<InputBytes> {
  const utf16 = await detectUtf16(path);
  if (!utf16) {
    return { encoding, totalBytes: fileSize, stream: (start = 0) => createReadStream(path, { start, highWaterMark: READ_CHUNK }) };
  }
  return {
    encoding: 'utf8',
    utf16,
    totalBytes: Math.round(fileSize / 2), // exact for ASCII text
    stream: (start = 0) => {
      const file = createReadStream(path, { highWaterMark: READ_CHUNK });
      const transcode = utf16ToUtf8(path, utf16, start);
      file.on('error', (err) => transcode.destroy(err));
      return file.pipe(transcode);
    },
  };
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
