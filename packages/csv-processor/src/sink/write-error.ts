import { CsvError } from '../errors.js';

/**
 * The error of a failed write to a file the run keeps (output, rejects, checkpoint): `output-io`
 * naming the file, and what to do when the disk is full or a limit is reached — a retry as it is
 * would fail at the same write, so the run stops with exit 1 (like the result store's `store-io`),
 * its checkpoint kept for `--resume` (docs/architecture.md, "Error handling").
 */
export function writeError(label: string, err: unknown): CsvError {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOSPC'
      ? 'the disk is full (ENOSPC); free space'
      : code === 'EDQUOT'
        ? 'the disk quota is used up (EDQUOT); free space or raise the quota'
        : code === 'EFBIG'
          ? 'the file reached the file-size limit (EFBIG: ulimit -f, or the largest file of its file system); raise the limit'
          : `${code ?? (err as Error).message}; fix that`;
  return new CsvError('output-io', `cannot write ${label}: ${why} or write the output elsewhere, then rerun with --resume`, { cause: err });
}
