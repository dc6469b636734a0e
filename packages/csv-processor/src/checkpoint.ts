import { createHash } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CsvError } from './errors.js';
import type { InputFingerprint } from './input-fingerprint.js';
import { writeError } from './sink/write-error.js';
import type { SinkState } from './sink/sink.js';
import type { SourcePosition } from './source/types.js';
import type { RunTotals } from './totals.js';

/** Everything a resumed run needs; written only after output and rejects are fsynced. */
export interface Checkpoint {
  readonly version: 1;
  /** sha256 of {@link Checkpoint.options}: a resume with other options is refused. */
  readonly optionsHash: string;
  /** The options that shape the output (mapping, mode, formats, input identity...). */
  readonly options: Readonly<Record<string, unknown>>;
  /** Input consumed so far: rows plus rejects, byte offset and line of the next record. */
  readonly position: SourcePosition;
  readonly sink: SinkState;
  /** Counts of all runs so far, so the final summary covers the whole file. */
  readonly totals: RunTotals;
  /**
   * Samples of the input's content up to `position.offset`: a resume over an input whose size and
   * modification time are the same but whose content is not is refused. Absent in a checkpoint
   * of an older dq-csv: its resume checks size and modification time only.
   */
  readonly input?: InputFingerprint;
  /** ISO time of this write. */
  readonly writtenAt: string;
}

/** Hash of the output-shaping options, stable across key order. */
export function hashOptions(options: Readonly<Record<string, unknown>>): string {
  const sorted = Object.fromEntries(Object.entries(options).sort(([a], [b]) => a.localeCompare(b)));
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex');
}

/** Reads the checkpoint at `path`; undefined when there is none. */
export async function readCheckpoint(path: string): Promise<Checkpoint | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CsvError('resume-mismatch', `cannot read the checkpoint ${path}: ${(err as NodeJS.ErrnoException).code}`, { cause: err });
  }
  try {
    const checkpoint = JSON.parse(text) as Checkpoint;
    if (checkpoint.version !== 1 || typeof checkpoint.optionsHash !== 'string') throw new Error('unknown checkpoint version');
    if (checkpoint.input !== undefined && !isFingerprint(checkpoint.input)) throw new Error('its input samples are damaged');
    const { outputTail, rejectsTail } = checkpoint.sink ?? {};
    if ([outputTail, rejectsTail].some((tail) => tail !== undefined && typeof tail !== 'string')) throw new Error('its output samples are damaged');
    return checkpoint;
  } catch (err) {
    throw new CsvError('resume-mismatch', `the checkpoint ${path} is not readable (${(err as Error).message}); delete it and the output to start over`, {
      cause: err,
    });
  }
}

function isFingerprint(value: unknown): value is InputFingerprint {
  const f = value as Partial<InputFingerprint> | null;
  return (
    typeof f === 'object' &&
    f !== null &&
    f.algorithm === 'sha256' &&
    typeof f.window === 'number' &&
    f.window > 0 &&
    typeof f.head === 'string' &&
    typeof f.tail === 'string' &&
    typeof f.before?.offset === 'number' &&
    typeof f.before.sha256 === 'string'
  );
}

/** Writes `checkpoint` atomically: temp file, fsync, rename over the old one, fsync the folder. */
export async function writeCheckpoint(path: string, checkpoint: Checkpoint): Promise<void> {
  const temp = `${path}.tmp`;
  try {
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(JSON.stringify(checkpoint) + '\n', 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
    const folder = await open(dirname(path), 'r');
    try {
      await folder.sync();
    } finally {
      await folder.close();
    }
  } catch (err) {
    throw writeError(`the checkpoint ${path}`, err);
  }
}

/** Removes the checkpoint (after a finished run). */
export async function removeCheckpoint(path: string): Promise<void> {
  await rm(path, { force: true });
  await rm(`${path}.tmp`, { force: true });
}

/** Names the options that differ between a checkpoint and this run, for the refusal message. */
export function differingOptions(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort();
}
