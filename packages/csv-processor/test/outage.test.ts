import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { readCsv, runCli, startCli, summaryOf, tempDir, type CliRun } from './helpers.js';

const SANDBOX_CLI = fileURLToPath(new URL('../../../tools/sandbox/bin/dq-sandbox.js', import.meta.url));

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterAll(async () => cleanup());

function args(input: string, output: string, ...more: string[]): string[] {
  return [
    'validate',
    '--input',
    input,
    '--output',
    output,
    '--delimiter',
    ';',
    '--country',
    'DE',
    '--map',
    'addressLine=strasse,postalCode=plz,locality=ort,country=land',
    '--rate-limit',
    '0',
    ...more,
  ];
}

/** Rows of an output with the request id and check time left out (each call has its own). */
async function comparable(path: string): Promise<string[][]> {
  const { header, rows } = await readCsv(path, { delimiter: ';' });
  const skip = [header.indexOf('dq_request_id'), header.indexOf('dq_checked_at')];
  return [header, ...rows].map((r) => r.filter((_, i) => !skip.includes(i)));
}

/** `dq-sandbox` in a process of its own; resolves with the child and its URL once it listens. */
async function sandboxProcess(config: string, port = 0): Promise<{ child: ChildProcess; url: string; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, [SANDBOX_CLI, '--port', String(port), '--config', config], { stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`dq-sandbox exited with ${code} before listening`)));
  });
  return { child, url, exited };
}

/** Resolves once the run's checkpoint says at least `records` input records are written. */
async function checkpointPast(output: string, records: number, run: Promise<unknown>): Promise<void> {
  let finished = false;
  void run.finally(() => (finished = true));
  for (;;) {
    if (finished) throw new Error(`the run ended before ${records} records were checkpointed`);
    const text = await readFile(`${output}.checkpoint.json`, 'utf8').catch(() => undefined);
    if (text && (JSON.parse(text) as { position: { records: number } }).position.records >= records) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function completed(child: ChildProcess): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

describe('dq-csv when the platform goes away or runs out of quota', () => {
  it('exits 75 with a checkpoint when the sandbox is killed mid-run, and --resume after it is back 60 s later answers every row like an uninterrupted run', async () => {
    const ROWS = 4000;
    const input = join(dir, 'outage.csv');
    await writeFile(input, makeSampleCsv(ROWS, 13));
    const config = join(dir, 'outage-sandbox.json');
    // A little latency per call, so that the run lasts long enough to be cut in the middle.
    await writeFile(
      config,
      JSON.stringify({
        accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }],
        faults: { batch: { latencyMs: 4 } },
      }),
    );
    const flags = ['--batch-size', '200', '--concurrency', '8'];

    // The reference: the same file, uninterrupted.
    const reference = join(dir, 'outage.reference.csv');
    const whole = await sandboxProcess(config);
    try {
      // Without a store: the interrupted run below must call the platform, not find the answers.
      const run = await runCli(args(input, reference, ...flags, '--store', 'off'), { DQ_BASE_URL: whole.url, DQ_API_KEY: DEFAULT_API_KEY });
      expect(run.code, run.stderr).toBe(0);
    } finally {
      whole.child.kill('SIGKILL');
      await whole.exited;
    }

    const output = join(dir, 'outage.out.csv');
    const first = await sandboxProcess(config);
    const port = new URL(first.url).port;
    const env = { DQ_BASE_URL: first.url, DQ_API_KEY: DEFAULT_API_KEY };
    const stopped = completed(startCli(args(input, output, ...flags), env));
    await checkpointPast(output, 800, stopped);
    first.child.kill('SIGKILL');
    await first.exited;
    const killedAt = Date.now();

    const run = await stopped;
    expect(run.code, run.stderr).toBe(75);
    const summary = summaryOf(run);
    expect(summary.outcome).toBe('stopped');
    expect(summary.error.code).toBe('platform-unreachable');
    expect(run.stderr).toMatch(/could not be reached since \d{4}-/);
    expect(run.stderr).toContain('--resume');
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    // Nothing was finalised as unavailable, and the checkpoint is where the written rows end.
    expect(summary.byStatus.unavailable).toBe(0);
    const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as { position: { records: number } };
    expect(checkpoint.position.records).toBeGreaterThanOrEqual(800);
    expect(checkpoint.position.records).toBeLessThan(ROWS);
    const partial = await readCsv(output, { delimiter: ';' });
    const status = partial.header.indexOf('dq_status');
    expect(partial.rows.filter((r) => r[status] === 'unavailable')).toEqual([]);

    // The platform is back on the same port a minute after it went away.
    await new Promise((r) => setTimeout(r, Math.max(0, 60_000 - (Date.now() - killedAt))));
    const back = await sandboxProcess(config, Number(port));
    try {
      const resumed = await runCli(args(input, output, ...flags, '--resume'), env);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed).outcome).toBe('done');
    } finally {
      back.child.kill('SIGKILL');
      await back.exited;
    }
    const out = await readCsv(output, { delimiter: ';' });
    expect(out.rows).toHaveLength(ROWS);
    expect(out.rows.filter((r) => r[status] === 'unavailable')).toEqual([]);
    expect(await comparable(output)).toEqual(await comparable(reference));
    await expect(stat(`${output}.checkpoint.json`)).rejects.toThrow();
  }, 240_000);

  it("pays no call twice when the quota stops the run before its first checkpoint: exit 3, then --resume with a raised quota finishes with at most the file's calls in all", async () => {
    const ROWS = 1200;
    const CONCURRENCY = 8;
    const input = join(dir, 'quota.csv');
    const output = join(dir, 'quota.out.csv');
    await writeFile(input, makeSampleCsv(ROWS, 17));
    const account = (quota: number) => ({ accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], plan: { quota, validUntil: null }, rateLimits: { batch: 0 } }] });
    // Batches of 500: the quota of 300 runs out inside the first one, before anything is checkpointed.
    const flags = ['--batch-size', '500', '--concurrency', String(CONCURRENCY)];

    const limited = await startSandbox({ port: 0, config: account(300) });
    let firstBillable: number;
    try {
      const stopped = await runCli(args(input, output, ...flags), { DQ_BASE_URL: limited.url, DQ_API_KEY: DEFAULT_API_KEY });
      expect(stopped.code, stopped.stderr).toBe(3);
      expect(stopped.stderr).toContain('quota-exhausted');
      expect(stopped.stderr).toContain('--resume');
      firstBillable = limited.stats().billable['a'] ?? 0;
      expect(firstBillable).toBe(300);
    } finally {
      await limited.close();
    }

    // The quota raised (a new plan period: a sandbox with the same data and a larger quota).
    const raised = await startSandbox({ port: 0, config: account(1_000_000) });
    try {
      const resumed = await runCli(args(input, output, ...flags, '--resume'), { DQ_BASE_URL: raised.url, DQ_API_KEY: DEFAULT_API_KEY });
      expect(resumed.code, resumed.stderr).toBe(0);
      const out = await readCsv(output, { delimiter: ';' });
      expect(out.rows.map((r) => r[0])).toEqual(Array.from({ length: ROWS }, (_, i) => `K${100_000 + i}`));
      const secondBillable = raised.stats().billable['a'] ?? 0;
      // Every answer the stopped run paid for is found again; at most the calls in flight when the
      // quota ran out (answered, but dropped by the stop) are bought a second time.
      expect(firstBillable + secondBillable).toBeLessThanOrEqual(ROWS + CONCURRENCY);
      expect(secondBillable).toBeLessThanOrEqual(ROWS - firstBillable + CONCURRENCY);
    } finally {
      await raised.close();
    }
  }, 120_000);
});
