import { CsvError } from '../errors.js';

/**
 * The error of a failed write to a file the run keeps (output, rejects, checkpoint): `output-io`
 * naming the file, and what to do when the disk is full or a limit is reached — a retry as it is
 * would fail at the same write, so the run stops with exit 1 (like the result store's `store-io`),
 * its checkpoint kept for `--resume` (docs/architecture.md, "Error handling").
 */
export function writeError(label: string, err: unknown): CsvError {
  return new CsvError('output-io', `cannot write ${label}: ${writeProblem(err)} or write the output elsewhere, then rerun with --resume`, { cause: err });
}

/** What a failed write or removal of a run's file means, with its code, and what to do about it. */
export function writeProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOSPC':
      return 'the disk is full (ENOSPC); free space';
    case 'EDQUOT':
      return 'the disk quota is used up (EDQUOT); free space or raise the quota';
    case 'EFBIG':
      return 'the file reached the file-size limit (EFBIG: ulimit -f, or the largest file of its file system); raise the limit';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code}): its folder or the file was made read-only during the run, or belongs to another user; give the run its write permission back`;
    case 'EROFS':
      return 'the file system became read-only (EROFS); mount it writable';
    case 'ENOENT':
      return 'its folder is gone (ENOENT); create it again';
    default:
      return `${code ?? (err as Error).message}; fix that`;
  }
}
