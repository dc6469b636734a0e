import { DqError } from '../errors/dq-error.js';
import { DOWNLOAD_CODES } from './errors.js';

/**
 * Reads a `.sha512` file in sha512sum format (`<128 hex digits>  <file name>`, or ` *<name>` for
 * binary mode; a bare digest is accepted too). When the line names a file, its last path segment
 * must be `artifact`. Returns the digest in lower case; throws `checksum-file-invalid` otherwise.
 */
export function parseChecksumFile(text: string, artifact: string, source: string): string {
  const first =
    text
      .replace(/^\uFEFF/, '')
      .split(/\r?\n/)[0]
      ?.trim() ?? '';
  const m = /^([0-9a-fA-F]{128})(?:\s+\*?(.+))?$/.exec(first);
  const named = m?.[2]?.trim().split(/[/\\]/).pop();
  if (m === null || (named !== undefined && named !== artifact)) {
    const why = m === null ? 'does not start with a 128-digit hex SHA-512' : `names "${named}", not "${artifact}"`;
    throw new DqError(`${source} ${why}; cannot verify ${artifact}`, { code: DOWNLOAD_CODES.checksumFileInvalid, retriable: false });
  }
  return (m[1] ?? '').toLowerCase();
}
