import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSource, type SourceOptions } from '../src/source/index.js';

/** The built CLI (tests run against dist, like users do). */
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** A fresh temp folder and a function that removes it. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-csv-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Outcome of a CLI run. */
export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, DQ_BASE_URL: '', DQ_API_KEY: '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Starts the CLI and returns the child, for tests that kill it. */
export function startCli(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
