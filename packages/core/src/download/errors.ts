import { DqError } from '../errors/dq-error.js';

/** Codes of the download module's own failures (platform answers keep the transport's codes). */
export const DOWNLOAD_CODES = {
  /** the file's SHA-512 differs from the expected one; the file was not placed */
  checksumMismatch: 'checksum-mismatch',
  /** a `.sha512` file that is not `<128 hex digits>  <name>` */
  checksumFileInvalid: 'checksum-file-invalid',
  /** version.txt whose first line is not `yyyy-mm-01` */
  versionFileInvalid: 'version-file-invalid',
  /** the server resumed at another offset than asked, or its file changed size; restarted from 0 */
  rangeMismatch: 'range-mismatch',
  /** the body ended before its announced length without a socket error */
  incompleteBody: 'incomplete-body',
  /** the body came slower than the client's `minProgress` (a trickling server); retried, resuming after the bytes held */
  stalled: 'download-stalled',
  /** the destination's file system has less room than the bytes still to come; nothing was written */
  noRoom: 'download-no-room',
  /** a folder where the download keeps its part file (`.dq-download-<key>.part`) or its sidecar; a person moves it away */
  partNotAFile: 'download-part-not-a-file',
} as const;

/**
 * The destination's file system has fewer free bytes than the download still has to write: it is
 * refused before any byte is written, so a download too big for the disk never fills it (other
 * programs on the machine need the room too). Not retriable: a person must free space.
 */
export class NoRoomError extends DqError {
  override name = 'NoRoomError';
  /** Bytes the download still had to write. */
  readonly needed: number;
  /** Bytes free on the destination's file system (for this user). */
  readonly free: number;

  constructor(fields: { urlPath: string; dir: string; needed: number; free: number }) {
    super(
      `GET ${fields.urlPath}: ${formatBytes(fields.needed)} still to write, but the file system of ${fields.dir} has ${formatBytes(fields.free)} free; nothing was written: free space there and download again`,
      { code: DOWNLOAD_CODES.noRoom, retriable: false },
    );
    this.needed = fields.needed;
    this.free = fields.free;
  }
}

/** `n` bytes for a person: bytes below 1 KiB, else KiB, MiB or GiB with one decimal. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

/**
 * A downloaded file's SHA-512 does not match the expected digest. The bad bytes were deleted, the
 * target file was not created or replaced. Not retriable: the server's file or checksum is wrong.
 */
export class ChecksumMismatchError extends DqError {
  override name = 'ChecksumMismatchError';
  /** File name the download was meant to be placed under. */
  readonly fileName: string;
  /** Expected SHA-512, lower-case hex. */
  readonly expected: string;
  /** SHA-512 of the bytes received, lower-case hex. */
  readonly actual: string;

  constructor(fields: { fileName: string; urlPath: string; expected: string; actual: string; requestId?: string | undefined }) {
    super(
      `SHA-512 mismatch for ${fields.fileName} (${fields.urlPath}): expected ${fields.expected}, got ${fields.actual}; ` +
        `the file was not placed. The server's file or its .sha512 is damaged: retry later, and report it if it persists ` +
        `[request id ${fields.requestId ?? 'none'}]`,
      { code: DOWNLOAD_CODES.checksumMismatch, retriable: false, requestId: fields.requestId },
    );
    this.fileName = fields.fileName;
    this.expected = fields.expected;
    this.actual = fields.actual;
  }
}
