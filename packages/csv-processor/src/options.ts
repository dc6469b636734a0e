import { resolve } from 'node:path';
import type { EngineConfig, Logger, Mode } from '@dq/core';
import type { EngineFlagSettings } from '@dq/core/cli';
import type { FieldMap } from './mapping.js';
import type { ProgressReporter } from './progress.js';
import type { InputEncoding, InputFormat } from './source/types.js';

/** Options of {@link processFile}: the CLI's flags, as a library call. */
export interface ProcessFileOptions {
  /** Input file. */
  input: string;
  /** Output file (same format as the input). */
  output: string;
  /** Rejects file (CSV); default `<output without extension>.rejects.csv`. */
  rejects?: string;
  /** Input format; default from the extension (`.json`, `.ndjson`/`.jsonl`, else csv). */
  format?: InputFormat;
  /** Input encoding; default utf8. Output is always UTF-8. */
  encoding?: InputEncoding;
  /** CSV delimiter, one ASCII character; default `,`. */
  delimiter?: string;
  /** What to check; default address. */
  mode?: Mode;
  /** Request field → column; default: columns named like the fields. */
  map?: FieldMap;
  /** Country for records without one (address mode). */
  country?: string;
  /** Address include options (`coordinates-wgs84`, `metadata`, ...). */
  include?: string[];
  /** Continue an interrupted run from its checkpoint (starts fresh if there is none). */
  resume?: boolean;
  /** Read and check the whole file and estimate the cost; no call, no output. */
  dryRun?: boolean;
  /** Largest acceptable share (0–1) of rejected plus unavailable records; default 0. */
  maxFailed?: number;
  /** Address API host. */
  baseUrl?: string;
  /** Real-time services host (company modes); default baseUrl. */
  realtimeUrl?: string;
  /** API key; never logged. */
  apiKey?: string;
  /**
   * Prefix `'` to every CSV cell (output and rejects) that starts with `=`, `+`, `-`, `@`, tab or
   * CR, so a spreadsheet shows it as text instead of running it as a formula. Default off: values
   * come out exactly as they came in.
   */
  spreadsheetSafe?: boolean;
  /** Write the run report (one HTML page) here at the end of the run. */
  report?: string;
  /** Rows per batch: the unit of output writes and checkpoints; default 500. */
  batchSize?: number;
  /**
   * Engine settings passed through (threads, concurrency, rate limits, retry, timeout), and the
   * result store: `store` (a folder, a postgres:// URL or `off`; default the user's cache folder)
   * and `maxAgeMs` (default 30 days).
   */
  engine?: Partial<
    Pick<EngineConfig, 'threads' | 'concurrency' | 'rateLimits' | 'retry' | 'timeoutMs' | 'addressEndpoint' | 'company' | 'budget' | 'account' | 'maxCalls'>
  > &
    Pick<EngineFlagSettings, 'store' | 'maxAgeMs'>;
  /** Progress reporter; default none. */
  progress?: ProgressReporter;
  /** Logger handed to the engine. */
  logger?: Logger;
  /** Gets advice about the input the run goes on with (a mapping that leaves out columns that look like fields); default: a warning to `logger`. */
  onHint?: (text: string) => void;
  /**
   * Stops the run once the calls in flight are answered (their answers kept, the batches they
   * complete written): no call is started after it; the checkpoint stays valid for --resume.
   */
  stop?: AbortSignal;
  /** Aborts the run, cutting the calls in flight (their answers lost); the checkpoint stays valid for --resume. */
  signal?: AbortSignal;
}

/** Paths derived from the output path. */
export interface RunPaths {
  readonly input: string;
  readonly output: string;
  readonly rejects: string;
  readonly checkpoint: string;
  /** Held while a run writes the output: a second run on the same output is refused. */
  readonly lock: string;
  /** Held beside `lock`: a run on another output writing the same rejects file is refused too. */
  readonly rejectsLock: string;
  /** The run report (`--report`), when asked for: written at the end, so checked like the others. */
  readonly report?: string;
  /**
   * `--output` and `--rejects` as given, when they name the files above another way (a symlink,
   * a symlinked folder): for messages.
   */
  readonly asGiven?: { readonly output?: string; readonly rejects?: string };
}

/**
 * Absolute paths of every file a run touches, from the paths as given. A run uses
 * `resolveRunPaths` (run-files.ts): the same, derived from the file the output path leads to.
 */
export function runPaths(options: Pick<ProcessFileOptions, 'input' | 'output' | 'rejects' | 'report'>): RunPaths {
  const output = resolve(options.output);
  const rejects = resolve(options.rejects ?? rejectsNextTo(output));
  return {
    input: resolve(options.input),
    output,
    rejects,
    checkpoint: `${output}.checkpoint.json`,
    lock: `${output}.lock`,
    rejectsLock: `${rejects}.lock`,
    ...(options.report !== undefined ? { report: resolve(options.report) } : {}),
  };
}

/** The default rejects file of `output`: `<output without extension>.rejects.csv`. */
export function rejectsNextTo(output: string): string {
  return `${output.replace(/\.(csv|json|ndjson|jsonl|txt)$/i, '')}.rejects.csv`;
}

/** The format implied by a file name (a gzip-compressed file's `.gz` left out: `.ndjson.gz` is NDJSON). */
export function formatFromPath(path: string): InputFormat {
  const name = path.replace(/\.gz$/i, '');
  if (/\.json$/i.test(name)) return 'json';
  if (/\.(ndjson|jsonl)$/i.test(name)) return 'ndjson';
  return 'csv';
}
