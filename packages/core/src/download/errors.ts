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
} as const;

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
