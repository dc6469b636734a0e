import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { formatCsvLine } from '../src/sink/csv-format.js';
import { billable, readCsv, runCli, sampleArgs, startCli, summaryOf, unlimited, useTempDir } from './helpers.js';

const dir = useTempDir();
const args = (input: string, output: string, store: string, ...more: string[]) => sampleArgs(input, output, '--rate-limit', '0', '--store', store, ...more);

/** The sample with every 100th row's street replaced by one of its own; returns the text and how many rows changed. */
function editOnePercent(csv: string): { text: string; edited: number } {
  const lines = csv.split('\n');
  let edited = 0;
  for (let i = 1; i < lines.length; i += 100) {
    if (lines[i] === '') continue;
    const cells = lines[i]!.split(';');
    // Only rows that are sent (a postal code and a locality): each edit is one distinct new input.
    if (cells[3] === '' || cells[4] === '' || lines[i]!.includes('"')) continue;
    cells[2] = `Geänderte Straße ${i}`;
    lines[i] = formatCsvLine(cells, ';').replace(/\r?\n$/, '');
    edited += 1;
  }
  return { text: lines.join('\n'), edited };
}

describe('dq-csv with the result store', () => {
  it('a second run over 100,000 rows calls nothing and writes the same bytes; 1 % edited costs the edited inputs', { timeout: 900_000 }, async () => {
    const rows = Number(process.env['DQ_STORE_TEST_ROWS'] ?? 100_000);
    const sandbox = await startSandbox({ port: 0, config: unlimited() });
    try {
      const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
      const store = join(dir, 'store-100k');
      const input = join(dir, 'big.csv');
      const sample = makeSampleCsv(rows, 21);
      await writeFile(input, sample);

      const first = await runCli(args(input, join(dir, 'big.1.csv'), store), env);
      expect(first.code, first.stderr).toBe(0);
      const paid = billable(sandbox);
      expect(paid).toBeGreaterThan(rows * 0.5);

      const second = await runCli(args(input, join(dir, 'big.2.csv'), store), env);
      expect(second.code, second.stderr).toBe(0);
      expect(billable(sandbox)).toBe(paid); // 0 calls
      const summary = summaryOf(second);
      expect(summary).toMatchObject({ apiCalls: 0, storeHitRate: 1 });
      expect(summary.callsSavedByStore).toBeGreaterThan(0);
      // Byte for byte: stored request ids and check times included.
      expect((await readFile(join(dir, 'big.2.csv'))).equals(await readFile(join(dir, 'big.1.csv')))).toBe(true);

      const { text, edited } = editOnePercent(sample);
      expect(edited).toBeGreaterThan(rows / 200);
      const editedInput = join(dir, 'big.edited.csv');
      await writeFile(editedInput, text);
      const third = await runCli(args(editedInput, join(dir, 'big.3.csv'), store), env);
      expect(third.code, third.stderr).toBe(0);
      expect(billable(sandbox) - paid).toBe(edited);
      expect(summaryOf(third).apiCalls).toBe(edited);
    } finally {
      await sandbox.close();
    }
  });

  it(
    'kill -9 early, in the middle and late, then a quota stop: all runs together pay at most the distinct inputs plus what was in flight',
    { timeout: 600_000 },
    async () => {
      const ROWS = 3000;
      const CONCURRENCY = 8;
      const input = join(dir, 'kills.csv');
      await writeFile(input, makeSampleCsv(ROWS, 31));
      // The distinct inputs: what one uninterrupted run without a store pays.
      const reference = await startSandbox({ port: 0, config: unlimited() });
      let distinct: number;
      try {
        const straight = await runCli(args(input, join(dir, 'kills.straight.csv'), 'off'), { DQ_BASE_URL: reference.url, DQ_API_KEY: DEFAULT_API_KEY });
        expect(straight.code, straight.stderr).toBe(0);
        distinct = billable(reference);
      } finally {
        await reference.close();
      }

      const store = join(dir, 'store-kills');
      const output = join(dir, 'kills.out.csv');
      const more = ['--resume', '--batch-size', '100', '--concurrency', String(CONCURRENCY)];
      let paid = 0;
      // A little latency per call, so that each run lasts long enough to be killed at a chosen point.
      const slow = await startSandbox({ port: 0, config: unlimited({ faults: { batch: { latencyMs: 3 } } }) });
      try {
        for (const point of [300, 1400, 2400]) {
          const child = startCli(args(input, output, store, ...more), { DQ_BASE_URL: slow.url, DQ_API_KEY: DEFAULT_API_KEY });
          const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
          for (;;) {
            const checkpoint = await readFile(`${output}.checkpoint.json`, 'utf8').catch(() => undefined);
            const records = checkpoint ? (JSON.parse(checkpoint) as { position: { records: number } }).position.records : 0;
            if (records >= point) break;
            await new Promise((r) => setTimeout(r, 5));
          }
          child.kill('SIGKILL');
          await exited;
        }
        paid += billable(slow);
      } finally {
        await slow.close();
      }
      // A quota that runs out part way: exit 3; then a new period's quota finishes the file.
      const limited = await startSandbox({ port: 0, config: unlimited({}, 150) });
      try {
        const stopped = await runCli(args(input, output, store, ...more), { DQ_BASE_URL: limited.url, DQ_API_KEY: DEFAULT_API_KEY });
        expect(stopped.code, stopped.stderr).toBe(3);
        paid += billable(limited);
      } finally {
        await limited.close();
      }
      const renewed = await startSandbox({ port: 0, config: unlimited() });
      try {
        const last = await runCli(args(input, output, store, ...more), { DQ_BASE_URL: renewed.url, DQ_API_KEY: DEFAULT_API_KEY });
        expect(last.code, last.stderr).toBe(0);
        expect(summaryOf(last).runs).toBe(5);
        paid += billable(renewed);
      } finally {
        await renewed.close();
      }
      // Three kills and one stop, each losing at most the calls in flight.
      expect(paid).toBeLessThanOrEqual(distinct + 4 * CONCURRENCY);
      const comparable = async (path: string) => {
        const { header, rows } = await readCsv(path, { delimiter: ';' });
        const skip = [header.indexOf('dq_request_id'), header.indexOf('dq_checked_at')];
        return [header, ...rows].map((r) => r.filter((_, i) => !skip.includes(i)));
      };
      expect(await comparable(output)).toEqual(await comparable(join(dir, 'kills.straight.csv')));
    },
  );

  it('--store off and --max-age 0 call everything; an answer older than --max-age is called again', { timeout: 300_000 }, async () => {
    const sandbox = await startSandbox({ port: 0, config: unlimited() });
    try {
      const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
      const input = join(dir, 'age.csv');
      await writeFile(input, makeSampleCsv(300, 41));
      const store = join(dir, 'store-age');
      const run = async (name: string, ...more: string[]) => {
        const before = billable(sandbox);
        const r = await runCli(args(input, join(dir, name), store, ...more), env);
        expect(r.code, r.stderr).toBe(0);
        return billable(sandbox) - before;
      };
      const all = await run('age.1.csv');
      expect(all).toBeGreaterThan(0);
      expect(await run('age.2.csv')).toBe(0);
      expect(await run('age.3.csv', '--max-age', '0')).toBe(all);
      const off = await runCli(args(input, join(dir, 'age.4.csv'), 'off'), env);
      expect(off.code, off.stderr).toBe(0);
      expect(summaryOf(off).apiCalls).toBe(all);
      // The dry run counts after the store: nothing to call now, everything once the answers are older than --max-age.
      const plan = await runCli([...args(input, join(dir, 'age.5.csv'), store), '--dry-run'], env);
      expect(summaryOf(plan).plan).toMatchObject({ calls: 0, fromStore: all });
      await new Promise((r) => setTimeout(r, 2_100));
      expect(await run('age.6.csv', '--max-age', '2s')).toBe(all);
      expect(await run('age.7.csv', '--max-age', '1h')).toBe(0); // the fresh answers were stored
    } finally {
      await sandbox.close();
    }
  });
});
