import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import { createLogger } from '@dq/core';
import { processFile } from '../src/run.js';
import { describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { startSandboxProcess } from '@dq/test-support/sandbox-process';
import { checkpointPast, comparable, completed, readCsv, runCli, sampleArgs, sandboxEnv, startCli, summaryOf, unlimited, useTempDir } from './helpers.js';

const dir = useTempDir();

const args = (input: string, output: string, ...more: string[]) => sampleArgs(input, output, '--rate-limit', '0', ...more);

// The outage test waits a minute for the platform to come back: the other tests (sandboxes of their
// own, one after another) run meanwhile.
describe.concurrent('dq-csv when the platform goes away or runs out of quota', () => {
  it('exits 75 with a checkpoint when the sandbox is killed mid-run, and --resume after it is back 60 s later answers every row like an uninterrupted run', async () => {
    const ROWS = 4000;
    const input = join(dir, 'outage.csv');
    await writeFile(input, makeSampleCsv(ROWS, 13));
    // A little latency per call, so that the run lasts long enough to be cut in the middle.
    const config = unlimited({ faults: { batch: { latencyMs: 4 } } });
    const flags = ['--batch-size', '200', '--concurrency', '8'];

    // The reference: the same file, uninterrupted, run while the platform below is away.
    const reference = join(dir, 'outage.reference.csv');
    const uninterrupted = async (): Promise<void> => {
      const whole = await startSandboxProcess(config);
      try {
        // Without a store: the interrupted run must call the platform, not find the answers.
        const run = await runCli(args(input, reference, ...flags, '--store', 'off'), sandboxEnv(whole));
        expect(run.code, run.stderr).toBe(0);
      } finally {
        whole.child.kill('SIGKILL');
        await whole.stop();
      }
    };

    const output = join(dir, 'outage.out.csv');
    const first = await startSandboxProcess(config);
    const port = new URL(first.url).port;
    const env = sandboxEnv(first);
    const stopped = completed(startCli(args(input, output, ...flags), env));
    await checkpointPast(output, 800, stopped);
    first.child.kill('SIGKILL');
    await first.stop();
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

    // The platform is back on the same port a minute after it went away (the reference is run meanwhile).
    await Promise.all([uninterrupted(), new Promise((r) => setTimeout(r, Math.max(0, 60_000 - (Date.now() - killedAt))))]);
    const back = await startSandboxProcess(config, { port: Number(port) });
    try {
      const resumed = await runCli(args(input, output, ...flags, '--resume'), env);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed).outcome).toBe('done');
    } finally {
      back.child.kill('SIGKILL');
      await back.stop();
    }
    const out = await readCsv(output, { delimiter: ';' });
    expect(out.rows).toHaveLength(ROWS);
    expect(out.rows.filter((r) => r[status] === 'unavailable')).toEqual([]);
    expect(await comparable(output)).toEqual(await comparable(reference));
    await expect(stat(`${output}.checkpoint.json`)).rejects.toThrow();
  }, 240_000);

  describe.concurrent('while the outage test waits', () => {
    it.sequential(
      "pays no call twice when the quota stops the run before its first checkpoint: exit 3, then --resume with a raised quota finishes with at most the file's calls in all",
      async () => {
        const ROWS = 1200;
        const CONCURRENCY = 8;
        const input = join(dir, 'quota.csv');
        const output = join(dir, 'quota.out.csv');
        await writeFile(input, makeSampleCsv(ROWS, 17));
        const account = (quota: number) => unlimited({}, quota);
        // Batches of 500: the quota of 300 runs out inside the first one, before anything is checkpointed.
        const flags = ['--batch-size', '500', '--concurrency', String(CONCURRENCY)];

        const limited = await startSandbox({ port: 0, config: account(300) });
        let firstBillable: number;
        try {
          const stopped = await runCli(args(input, output, ...flags), sandboxEnv(limited));
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
          const resumed = await runCli(args(input, output, ...flags, '--resume'), sandboxEnv(raised));
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
      },
      120_000,
    );

    it.sequential(
      'says first that it was interrupted, then what the platform did, when a SIGTERM comes as the calls in flight find an outage: the code and the message agree',
      async () => {
        const ROWS = 600;
        const input = join(dir, 'term-outage.csv');
        const output = join(dir, 'term-outage.out.csv');
        await writeFile(input, makeSampleCsv(ROWS, 19));
        const sandbox = await startSandbox({ port: 0, config: unlimited({ faults: { batch: { errorRate: 1, errorStatuses: [503] } } }) });
        // The signal arrives just as the engine finds the outage (the race main.ts meets when a SIGTERM
        // comes while the calls in flight give up): the run ends with the outage's error, stopped.
        const { stop, logger } = sigtermWhenLogged('platform unreachable');
        try {
          const options = {
            ...inProcessRun(input, output, sandbox.url),
            engine: { store: 'off' as const, concurrency: 12, retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 10 } },
            logger,
          };
          const stopped = await processFile({ ...options, signal: stop.signal });
          expect(stop.signal.aborted).toBe(true);
          expect(stopped.exitCode).toBe(75);
          expect(stopped.error?.code).toBe('interrupted');
          expect(stopped.error?.message).toMatch(
            /^interrupted by SIGTERM; meanwhile the platform could not be reached since .*; no input record is written yet; rerun with --resume$/,
          );

          sandbox.setFaults({});
          const resumed = await processFile({ ...options, resume: true });
          expect(resumed.exitCode).toBe(0);
          const out = await readCsv(output, { delimiter: ';' });
          expect(out.rows).toHaveLength(ROWS);
          expect(out.rows.filter((r) => r[out.header.indexOf('dq_status')] === 'unavailable')).toEqual([]);
        } finally {
          await sandbox.close();
        }
      },
    );

    it.sequential('a SIGTERM that comes as the quota runs out does not hide it: exit 3, quota-exhausted (a rerun alone would meet it again)', async () => {
      const input = join(dir, 'term-quota.csv');
      const output = join(dir, 'term-quota.out.csv');
      await writeFile(input, makeSampleCsv(600, 21));
      const sandbox = await startSandbox({ port: 0, config: unlimited({}, 100) });
      const { stop, logger } = sigtermWhenLogged('run stopped');
      try {
        const stopped = await processFile({ ...inProcessRun(input, output, sandbox.url), engine: { store: 'off' }, logger, signal: stop.signal });
        expect(stop.signal.aborted).toBe(true);
        expect(stopped.exitCode).toBe(3);
        expect(stopped.error?.code).toBe('quota-exhausted');
      } finally {
        await sandbox.close();
      }
    });
  });
});

/** A run of the sample CSV in this process (processFile), against the platform at `url`, in batches of 50. */
function inProcessRun(input: string, output: string, url: string) {
  return { input, output, delimiter: ';', country: 'DE', map: SAMPLE_FIELDS, baseUrl: url, apiKey: DEFAULT_API_KEY, batchSize: 50 };
}

/** The sample CSV's --map (SAMPLE_MAP) as processFile takes it. */
const SAMPLE_FIELDS = { addressLine: 'strasse', postalCode: 'plz', locality: 'ort', country: 'land' };

/** A logger that aborts `stop` as a SIGTERM does (main.ts) the moment a line containing `text` is logged. */
function sigtermWhenLogged(text: string): { stop: AbortController; logger: ReturnType<typeof createLogger> } {
  const stop = new AbortController();
  const logger = createLogger({ level: 'error', write: (line) => void (line.includes(text) && stop.abort(new Error('interrupted by SIGTERM'))) });
  return { stop, logger };
}
