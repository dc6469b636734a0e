import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeSampleCsv } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { checkpointRecords, runCli, sampleArgs, summaryOf, unlimited, useSandbox, useTempDir } from './helpers.js';

// Defaults no other test leaves out while asserting their effect: --concurrency (32 HTTP calls in
// flight) and --batch-size (500 rows per durable batch and checkpoint). The sandbox answers every
// batch/sync call 100 ms late and has no rate limit, and the run passes --rate-limit 0, so the
// client's own cap on calls in flight is what limits it.
const ROWS = 1_300;
const dir = useTempDir();
const sandbox = useSandbox(unlimited({ faults: { batch: { latencyMs: 100 } } }));

describe('dq-csv validate without --concurrency and --batch-size', () => {
  it('keeps exactly 32 calls in flight and checkpoints every 500 rows', async () => {
    const input = join(dir, 'in.csv');
    const output = join(dir, 'out.csv');
    await writeFile(input, makeSampleCsv(ROWS, 17));

    const run = runCli(sampleArgs(input, output, '--rate-limit', '0', '--store', 'off'), sandbox.env());
    let done = false;
    void run.finally(() => (done = true));
    const seen = new Set<number>();
    while (!done) {
      seen.add(await checkpointRecords(output));
      await new Promise((r) => setTimeout(r, 15));
    }
    const result = await run;
    expect(result.code, result.stderr).toBe(0);
    expect(summaryOf(result)).toMatchObject({ rows: ROWS });

    expect(sandbox.stats().concurrent['batch']?.max).toBe(32);
    // Every checkpoint the run wrote lies on a batch boundary of 500 rows (or at the end).
    seen.delete(0);
    expect([...seen].sort((a, b) => a - b)).toEqual(expect.arrayContaining([500, 1_000]));
    for (const records of seen) expect([500, 1_000, ROWS], `checkpoint at ${records} rows`).toContain(records);
  }, 60_000);
});

describe('dq-csv validate --mode company without --rate-limit', () => {
  // The contract names no limit for company searches: the default is a cautious 10/s (README
  // "Rate limits"). The sandbox here enforces none, so the pacing seen is the client's own.
  const companies = useSandbox(unlimited());

  it('paces company searches at 10 per second', async () => {
    const input = join(dir, 'companies.csv');
    await writeFile(input, `name\n${Array.from({ length: 30 }, (_, i) => `Beispiel ${i} GmbH`).join('\n')}\n`);
    const run = await runCli(
      ['validate', '--input', input, '--output', join(dir, 'companies.out.csv'), '--mode', 'company', '--map', 'company=name', '--store', 'off'],
      companies.env(),
    );
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({ rows: 30, apiCalls: 30 });
    // 30 searches at 10/s take 29 intervals of ~0.1 s; at the address rate (100/s) they took 0.3 s.
    expect(summary['durationMs']).toBeGreaterThanOrEqual(2_800);
    expect(summary['durationMs']).toBeLessThan(5_000);
  }, 60_000);
});
