import { spawn } from 'node:child_process';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, makeSampleCsv, startSandbox, type Sandbox } from '@dq/sandbox';
import { openLmdbStore } from '@dq/core/store';
import { beforeAll, describe, expect, it } from 'vitest';
import { billable, CLI, comparable, completed, readCsv, runCli, sampleArgs, summaryOf, unlimited, useTempDir } from './helpers.js';

// The embedded result store's disk fills up in the middle of a run. A process started with a
// file-size limit (RLIMIT_FSIZE, `prlimit --fsize`) sees its files stop growing at that size the
// way a full disk stops them (EFBIG instead of ENOSPC; Node ignores SIGXFSZ, so the write fails
// and the process lives on). The limit is chosen so that the store's file outgrows it while the
// output, which grows more slowly, stays well below it.

const dir = useTempDir();
const ROWS = 5000;
const CONCURRENCY = 8;
/** What was in flight when the store failed, which the rerun buys again (as in store-failure.test.ts). */
const BOUGHT_IN_FLIGHT = 3 * CONCURRENCY;
let input: string;
let reference: { distinct: number; output: string; storeBytes: number };

beforeAll(async () => {
  input = join(dir, 'in.csv');
  await writeFile(input, makeSampleCsv(ROWS, 91));
  // One uninterrupted run into an empty store: what the file costs, what it writes, how big the store gets.
  const sandbox = await startSandbox({ port: 0, config: unlimited() });
  try {
    const output = join(dir, 'reference.csv');
    const store = join(dir, 'reference-store');
    const straight = await runCli(sampleArgs(input, output, '--rate-limit', '0', '--store', store), env(sandbox));
    expect(straight.code, straight.stderr).toBe(0);
    reference = { distinct: billable(sandbox), output, storeBytes: (await stat(join(store, 'results.mdb'))).size };
  } finally {
    await sandbox.close();
  }
}, 300_000);

const env = (sandbox: Sandbox) => ({ DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });

/** Runs dq-csv under a file-size limit of `limit` bytes (on that process only) and returns what it paid. */
async function runLimited(limit: number, output: string, store: string) {
  const sandbox = await startSandbox({ port: 0, config: unlimited() });
  try {
    const args = sampleArgs(input, output, '--rate-limit', '0', '--store', store, '--resume', '--concurrency', String(CONCURRENCY));
    const child = spawn('prlimit', [`--fsize=${limit}`, process.execPath, CLI, ...args], {
      env: { ...process.env, ...env(sandbox) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const ended = await completed(child);
    return { ended, paid: billable(sandbox) };
  } finally {
    await sandbox.close();
  }
}

describe('dq-csv validate when the disk of the embedded result store fills up mid-run', () => {
  it(
    'exits 1 at its last checkpoint with one line naming the store folder and the file-size limit; the store opens again intact and the rerun without the limit pays only for answers not stored',
    { timeout: 300_000 },
    async () => {
      // About half the size a whole run's store reaches: the store must outgrow it halfway through.
      // Not a multiple of LMDB's 4 KiB page, so the commit that meets it is cut short part-way
      // (the way a file system with a few blocks left cuts it).
      const limit = Math.floor(reference.storeBytes / 2) + 1000;
      const output = join(dir, 'out.csv');
      const store = join(dir, 'store');

      const first = await runLimited(limit, output, store);
      expect(first.ended.signal, first.ended.stderr).toBeNull(); // not killed by SIGXFSZ
      expect(first.ended.code, first.ended.stderr).toBe(1);
      // The limit bit the store, not the output: the output stayed well below it.
      expect((await stat(output)).size).toBeLessThan(limit * 0.8);
      expect((await stat(join(store, 'results.mdb'))).size).toBe(limit);

      const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as {
        position: { records: number };
        sink: { outputBytes: number; rows: number };
      };
      // One line: the store's folder, the cause, what to do; no stack trace.
      expect(first.ended.stderr).not.toMatch(/\n\s+at /);
      const lines = first.ended.stderr.split('\n').filter((l) => l.startsWith('dq-csv: '));
      expect(lines, first.ended.stderr).toHaveLength(1);
      expect(lines[0]).toBe(
        `dq-csv: store-io: the result store ${store} cannot be used: its file reached the file-size limit (EFBIG: ulimit -f, or the largest file of its file system); ` +
          `raise the limit or give --store a folder on another file system, then rerun (or pass --store off); ` +
          `input records 1-${checkpoint.position.records} are written and checkpointed; rerun with --resume`,
      );
      expect(summaryOf(first.ended)).toMatchObject({ outcome: 'stopped', exitCode: 1, error: { code: 'store-io' } });

      // The output holds exactly the checkpointed rows, each whole; nothing past the checkpoint.
      expect((await stat(output)).size).toBe(checkpoint.sink.outputBytes);
      expect((await readCsv(output, { delimiter: ';' })).rows).toHaveLength(checkpoint.sink.rows);
      expect(checkpoint.position.records).toBeGreaterThan(0);
      expect(checkpoint.position.records).toBeLessThan(ROWS);
      expect(await readdir(store)).toEqual(['results.mdb', 'results.mdb-lock']); // no scratch file left

      // The failed commit left the store intact: it opens, and every entry reads back.
      const reopened = await openLmdbStore(store, 30 * 86_400_000);
      try {
        const info = await reopened.info();
        expect(info.entries).toBeGreaterThanOrEqual(checkpoint.position.records / 2);
      } finally {
        await reopened.close();
      }

      // The rerun without the limit finishes the file, buying again at most what was in flight.
      const sandbox = await startSandbox({ port: 0, config: unlimited() });
      try {
        const second = await runCli(sampleArgs(input, output, '--rate-limit', '0', '--store', store, '--resume'), env(sandbox));
        expect(second.code, second.stderr).toBe(0);
        expect(await comparable(output)).toEqual(await comparable(reference.output));
        expect(first.paid + billable(sandbox)).toBeLessThanOrEqual(reference.distinct + BOUGHT_IN_FLIGHT);
      } finally {
        await sandbox.close();
      }
    },
  );
});
