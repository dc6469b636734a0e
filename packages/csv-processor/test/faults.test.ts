import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { readCsv, runCli, sampleArgs, sandboxEnv, summaryOf, unlimited, useTempDir } from './helpers.js';

const ROWS = 600;
const dir = useTempDir();

const quotaConfig = (quota: number) => unlimited({}, quota);

const args = (input: string, output: string, ...more: string[]) => sampleArgs(input, output, '--batch-size', '100', '--rate-limit', '0', ...more);

describe('an unreliable or exhausted platform', () => {
  it('completes with 20 % 503s and 5 % connection resets, losing no row', async () => {
    const sandbox: Sandbox = await startSandbox({
      port: 0,
      config: { ...quotaConfig(1_000_000), faults: { batch: { errorRate: 0.2, errorStatuses: [503], resetRate: 0.05 } } },
    });
    try {
      const input = join(dir, 'faults.csv');
      await writeFile(input, makeSampleCsv(ROWS, 3));
      const run = await runCli(args(input, join(dir, 'faults.out.csv'), '--max-failed', '0.01'), sandboxEnv(sandbox));
      expect(run.code, run.stderr).toBe(0);
      const stats = sandbox.stats();
      expect(stats.faults['batch']?.errors).toBeGreaterThan(0);
      expect(stats.faults['batch']?.resets).toBeGreaterThan(0);
      const out = await readCsv(join(dir, 'faults.out.csv'), { delimiter: ';' });
      expect(out.rows.map((r) => r[0])).toEqual(Array.from({ length: ROWS }, (_, i) => `K${100_000 + i}`));
      const status = out.header.indexOf('dq_status');
      const error = out.header.indexOf('dq_error');
      for (const row of out.rows) {
        expect(['accepted', 'review', 'invalid', 'invalid-input', 'unavailable']).toContain(row[status]);
        if (row[status] === 'unavailable') expect(row[error]).not.toBe('');
      }
      expect(summaryOf(run).retries).toBeGreaterThan(0);
    } finally {
      await sandbox.close();
    }
  });

  it('stops with exit 3 when the quota runs out, and a later --resume with a fresh quota finishes', async () => {
    const sandbox = await startSandbox({ port: 0, config: quotaConfig(350) }); // ~540 calls needed
    try {
      const input = join(dir, 'quota.csv');
      const output = join(dir, 'quota.out.csv');
      await writeFile(input, makeSampleCsv(ROWS, 5));
      const env = sandboxEnv(sandbox);
      // With a worker thread: the stop crosses the thread boundary (the resume runs on the main thread).
      const stopped = await runCli(args(input, output, '--resume', '--threads', '1'), env);
      expect(stopped.code).toBe(3);
      expect(stopped.stderr).toContain('quota-exhausted');
      expect(stopped.stderr).toContain('--resume');
      expect(stopped.stderr).not.toContain(DEFAULT_API_KEY);
      const partial = summaryOf(stopped);
      expect(partial.outcome).toBe('stopped');
      expect(partial.rows).toBeGreaterThan(0);
      expect(partial.rows).toBeLessThan(ROWS);
      const written = await readCsv(output, { delimiter: ';' });
      expect(written.rows.length).toBe(partial.rows);

      // A fresh quota (a new plan period: here a second sandbox with the same data, at another URL).
      const renewed = await startSandbox({ port: 0, config: quotaConfig(1_000_000) });
      const finished = await runCli(args(input, output, '--resume'), { ...env, DQ_BASE_URL: renewed.url }).finally(() => renewed.close());
      expect(finished.code, finished.stderr).toBe(0);
      const out = await readCsv(output, { delimiter: ';' });
      expect(out.rows.map((r) => r[0])).toEqual(Array.from({ length: ROWS }, (_, i) => `K${100_000 + i}`));
    } finally {
      await sandbox.close();
    }
  });
});
