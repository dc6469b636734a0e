import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import {
  billable,
  checkpointPast,
  completed,
  readCsv,
  runCli,
  sampleArgs,
  sandboxEnv,
  startCli,
  summaryOf,
  unlimited,
  useTempDir,
  type CliRun,
} from './helpers.js';

// A 429's Retry-After is waited out when the retry policy waits that long (30 s by default); a
// longer one stops the run at once with exit 75 and a checkpoint, naming the time to come back.
const ROWS = 600;
const dir = useTempDir();
let sandbox: Sandbox | undefined;

afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

const config = unlimited();
const env = () => sandboxEnv(sandbox!);
const args = (input: string, output: string, ...more: string[]) => sampleArgs(input, output, '--batch-size', '50', ...more);

/** Runs the CLI until it exits; `during` is called once the checkpoint of `output` holds at least `atRecords`. */
async function runUntil(cliArgs: string[], output: string, atRecords: number, during: () => void): Promise<CliRun & { afterMs: number }> {
  const run = completed(startCli(cliArgs, env()));
  await checkpointPast(output, atRecords, run);
  during();
  const from = performance.now();
  return { ...(await run), afterMs: performance.now() - from };
}

describe('Retry-After from the platform', () => {
  it('a Retry-After longer than the retry policy waits stops the run at once with exit 75, the time to come back and a checkpoint; --resume later finishes without paying again', async () => {
    sandbox = await startSandbox({ port: 0, config });
    const input = join(dir, 'long.csv');
    const output = join(dir, 'long.out.csv');
    await writeFile(input, makeSampleCsv(ROWS, 21));
    // 50 calls/s: the run would take 12 s; an hour's Retry-After arrives once 100 rows are done.
    const stopped = await runUntil(args(input, output, '--rate-limit', '50', '--resume'), output, 100, () =>
      sandbox!.setFaults({ batch: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 3600 } }),
    );
    const comeBack = Date.now() + 3600_000;
    expect(stopped.code, stopped.stderr).toBe(75);
    // Not after an hour, nor after the 30 s the policy would wait: the first such answer stops it.
    expect(stopped.afterMs).toBeLessThan(15_000);
    const at = /come back at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)/.exec(stopped.stderr)?.[1];
    expect(at, stopped.stderr).toBeDefined();
    expect(Math.abs(Date.parse(at!) - comeBack)).toBeLessThan(60_000);
    expect(stopped.stderr).toContain('--resume');
    expect(stopped.stderr).not.toMatch(/\n\s+at /);
    expect(stopped.stderr).not.toContain(DEFAULT_API_KEY);
    const partial = summaryOf(stopped);
    expect(partial.outcome).toBe('stopped');
    expect(partial.rows).toBeGreaterThanOrEqual(100);
    expect(partial.rows).toBeLessThan(ROWS);
    expect((await readCsv(output, { delimiter: ';' })).rows.length).toBe(partial.rows);
    expect((await stat(`${output}.checkpoint.json`)).isFile()).toBe(true);

    // The platform takes calls again: the rerun finishes the file, paying no answer twice.
    const paidBefore = billable(sandbox!);
    sandbox.setFaults({});
    const finished = await runCli(args(input, output, '--rate-limit', '0', '--resume'), env());
    expect(finished.code, finished.stderr).toBe(0);
    const out = await readCsv(output, { delimiter: ';' });
    expect(out.rows.map((r) => r[0])).toEqual(Array.from({ length: ROWS }, (_, i) => `K${100_000 + i}`));
    expect(billable(sandbox!) - paidBefore).toBeLessThanOrEqual(ROWS - partial.rows);
    expect(billable(sandbox!)).toBeLessThanOrEqual(ROWS);
  });

  it('a Retry-After the policy allows is waited out: the run finishes with every row answered', async () => {
    sandbox = await startSandbox({ port: 0, config: { ...config, faults: { batch: { errorRate: 0.2, errorStatuses: [429], retryAfterSeconds: 1 } } } });
    const input = join(dir, 'short.csv');
    const output = join(dir, 'short.out.csv');
    await writeFile(input, makeSampleCsv(200, 22));
    const started = performance.now();
    const run = await runCli(args(input, output, '--rate-limit', '0'), env());
    expect(run.code, run.stderr).toBe(0);
    expect(sandbox.stats().requests['batch']?.byStatus['429']).toBeGreaterThan(0);
    // Every 429 held the senders back for its second.
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
    const out = await readCsv(output, { delimiter: ';' });
    const status = out.header.indexOf('dq_status');
    expect(out.rows).toHaveLength(200);
    expect(out.rows.filter((r) => r[status] === 'unavailable')).toEqual([]);
    expect(summaryOf(run).retries).toBeGreaterThan(0);
  });

  it('calls still refused with 429 once their retries are used up stop the run (exit 75, rate-limited, what to do) instead of marking their rows unavailable; --resume finishes every row', async () => {
    // Something else uses the account's calls per second: most calls are refused, a few of them
    // on every one of their attempts (0.7^6 ≈ 12 % of 200 calls).
    sandbox = await startSandbox({ port: 0, config: { ...config, faults: { batch: { errorRate: 0.7, errorStatuses: [429], retryAfterSeconds: 0 } } } });
    const input = join(dir, 'refused.csv');
    const output = join(dir, 'refused.out.csv');
    await writeFile(input, makeSampleCsv(200, 23));
    const stopped = await runCli(args(input, output, '--rate-limit', '0'), env());
    expect(stopped.code, stopped.stderr).toBe(75);
    const summary = summaryOf(stopped);
    expect(summary.error.code).toBe('rate-limited');
    expect(summary.byStatus.unavailable).toBe(0);
    expect(stopped.stderr).toMatch(
      /^dq-csv: rate-limited: the platform kept refusing calls for the account's rate limit \(Gave up after 6 attempts.*HTTP 429.*the same --account-db postgres:\/\/… for every job\), or lower --rate-limit, then rerun with --resume/m,
    );
    const written = await readCsv(output, { delimiter: ';' });
    const status = written.header.indexOf('dq_status');
    expect(written.rows.filter((r) => r[status] === 'unavailable')).toEqual([]);

    sandbox.setFaults({});
    const resumed = await runCli(args(input, output, '--rate-limit', '0', '--resume'), env());
    expect(resumed.code, resumed.stderr).toBe(0);
    const out = await readCsv(output, { delimiter: ';' });
    expect(out.rows).toHaveLength(200);
    expect(out.rows.filter((r) => r[status] === 'unavailable')).toEqual([]);
  });
});
