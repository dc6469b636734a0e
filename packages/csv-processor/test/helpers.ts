import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_API_KEY, type Sandbox } from '@dq/sandbox';
import { openSource, type SourceOptions } from '../src/source/index.js';

/** The built CLI (tests run against dist, like users do). */
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** A fresh temp folder and a function that removes it. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-csv-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

// Per-file setup (a temp folder, the sandbox over real HTTP), as every project's tests use it.
export { sandboxEnv, useSandbox, useTempDir } from '@dq/test-support/use';

/** Sandbox config: one account with the default API key and no rate limit on batch calls; `quota` sets a plan. */
export function unlimited(extra: Record<string, unknown> = {}, quota?: number) {
  return {
    accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 }, ...(quota === undefined ? {} : { plan: { quota, validUntil: null } }) }],
    ...extra,
  };
}

/** Billable calls of every account the sandbox counted so far. */
export function billable(sandbox: Sandbox): number {
  return Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);
}

export { SAMPLE_MAP, sampleArgs } from '@dq/test-support/csv';

/** Rows of a `;`-separated output with the request id and check time left out (each call has its own). */
export async function comparable(path: string): Promise<string[][]> {
  const { header, rows } = await readCsv(path, { delimiter: ';' });
  const skip = [header.indexOf('dq_request_id'), header.indexOf('dq_checked_at')];
  return [header, ...rows].map((r) => r.filter((_, i) => !skip.includes(i)));
}

/** Input records the checkpoint of `output` says are written (0 before the first checkpoint). */
export async function checkpointRecords(output: string): Promise<number> {
  const text = await readFile(`${output}.checkpoint.json`, 'utf8').catch(() => undefined);
  return text ? (JSON.parse(text) as { position: { records: number } }).position.records : 0;
}

/** Resolves once the checkpoint of `output` holds at least `records`; rejects if `run` settles first. */
export async function checkpointPast(output: string, records: number, run: Promise<unknown>, pollMs = 10): Promise<void> {
  let finished: string | undefined;
  void run.then(
    (result) => (finished = (result as Partial<CliRun> | undefined)?.stderr ?? ''),
    (e) => (finished = String(e)),
  );
  for (;;) {
    if ((await checkpointRecords(output)) >= records) return;
    if (finished !== undefined) throw new Error(`the run ended before ${records} records were checkpointed: ${finished}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Outcome of a CLI run. */
export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI to completion. `env` adds to this process's environment (DQ_BASE_URL and DQ_API_KEY
 * cleared unless given); a variable set to `undefined` is left out of the child's environment.
 */
export function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, DQ_BASE_URL: '', DQ_API_KEY: '', ...env } });
  return completed(child);
}

/** Starts the CLI and returns the child, for tests that kill it. */
export function startCli(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Runs the CLI under a file-size limit of `bytes` (`prlimit --fsize`, on that process only): a
 * file growing past it fails with EFBIG, the way a full disk fails with ENOSPC.
 */
export function runCliWithFileSizeLimit(bytes: number, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const child = spawn('prlimit', [`--fsize=${bytes}`, process.execPath, CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return completed(child);
}

/** The outcome of a started child (its output collected from now on). */
export function completed(child: ChildProcess): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** The last JSON summary line printed on stdout. */
export function summaryOf(run: CliRun): Record<string, any> {
  const line = run.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{"event":"summary"'))
    .pop();
  if (!line) throw new Error(`no summary line; stderr: ${run.stderr}`);
  return JSON.parse(line) as Record<string, any>;
}

/** Reads a CSV (the output or rejects) with dq-csv's own reader: header and rows of cells. */
export async function readCsv(path: string, options: Partial<SourceOptions> = {}): Promise<{ header: string[]; rows: string[][] }> {
  const source = await openSource({ path, format: 'csv', ...options });
  const rows: string[][] = [];
  for await (const item of source.items) {
    if (item.kind !== 'row') throw new Error(`${path} line ${item.line}: ${item.reason}`);
    rows.push([...(item.cells ?? [])]);
  }
  return { header: [...(source.header ?? [])], rows };
}

/** Sum of requests the sandbox saw on the batch endpoint. */
export function batchCalls(stats: { requests: Record<string, { total: number }> }): number {
  return stats.requests['batch']?.total ?? 0;
}
