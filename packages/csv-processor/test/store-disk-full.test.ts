import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_API_KEY, makeSampleCsv, startSandbox, type Sandbox } from '@dq/sandbox';
import { openLmdbStore } from '@dq/core/store';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  billable,
  checkpointPast,
  CLI,
  comparable,
  completed,
  readCsv,
  runCli,
  runCliWithFileSizeLimit,
  sampleArgs,
  summaryOf,
  unlimited,
  useTempDir,
} from './helpers.js';

// The embedded result store's disk fills up in the middle of a run. A process started with a
// file-size limit (RLIMIT_FSIZE, `prlimit --fsize`) sees its files stop growing at that size the
// way a full disk stops them (EFBIG instead of ENOSPC; Node ignores SIGXFSZ, so the write fails
// and the process lives on). The limit is chosen so that the store's file outgrows it while the
// output, which grows more slowly, stays well below it. Where this process may mount a file system
// in a mount namespace of its own (root), a second test fills a real one: a tmpfs holding the store.

const dir = useTempDir();
const ROWS = 5000;
const CONCURRENCY = 8;
/** What was in flight when the store failed, which the rerun buys again (as in store-failure.test.ts). */
const BOUGHT_IN_FLIGHT = 3 * CONCURRENCY;
/** dq-store, the store's own command (`info` reads every entry). */
const DQ_STORE = fileURLToPath(new URL('../../core/bin/dq-store.js', import.meta.url));
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
    const ended = await runCliWithFileSizeLimit(limit, args, env(sandbox));
    return { ended, paid: billable(sandbox) };
  } finally {
    await sandbox.close();
  }
}

/** Whether this process may mount a tmpfs in a mount namespace of its own (root with CAP_SYS_ADMIN). */
function canMountTmpfs(): boolean {
  const target = mkdtempSync(join(tmpdir(), 'dq-mount-check-'));
  try {
    execFileSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs "$0"', target], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(target, { recursive: true, force: true });
  }
}

describe('dq-csv validate when the disk of the embedded result store fills up mid-run', () => {
  it(
    'exits 1 at its last checkpoint with one line naming the store folder and the file-size limit; the store opens again intact and the rerun without the limit pays only for answers not stored',
    { timeout: 300_000 },
    async () => {
      // About half the size a whole run's store file reaches: the store must outgrow it halfway
      // through (not at a 4 KiB page boundary: a write is cut short part-way, as on a real disk).
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
      expect(await readdir(store)).toEqual(['results.mdb', 'results.mdb-lock']);

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

  it.skipIf(!canMountTmpfs())(
    'a real disk fills up (a tmpfs, filled by another file mid-run): exit 1 naming ENOSPC in one clean line, no crash, the store intact; once there is room the rerun pays only for answers not stored',
    { timeout: 300_000 },
    async () => {
      // The store on a tmpfs mounted in a mount namespace of its own, which lives as long as the
      // script; output and checkpoint outside it. Once 400 records are checkpointed a filler file
      // takes every free block. After the run: dq-store reads the store, the filler goes, the rerun.
      const disk = join(dir, 'disk');
      await mkdir(disk);
      const store = join(disk, 'store');
      const output = join(dir, 'full.csv');
      const run = join(dir, 'full-run');
      const script = [
        'mount -t tmpfs -o size=64m tmpfs "$DISK" || exit 90',
        '"$@" >"$RUN.first.out" 2>"$RUN.first.err" & pid=$!',
        'while [ ! -e "$RUN.fill" ]; do sleep 0.02; done',
        'cat /dev/zero >"$DISK/filler" 2>/dev/null',
        'wait $pid; echo $? >"$RUN.first.code"',
        'cp "$OUTPUT" "$RUN.output" && cp "$OUTPUT.checkpoint.json" "$RUN.output.checkpoint.json" || exit 91',
        'ls -A "$DISK/store" >"$RUN.files"',
        '"$0" "$DQ_STORE" info --json --store "$DISK/store" >"$RUN.info" 2>&1 || exit 92',
        'rm "$DISK/filler"',
        '"$@" >"$RUN.second.out" 2>"$RUN.second.err"; echo $? >"$RUN.second.code"',
      ].join('\n');
      const sandbox = await startSandbox({ port: 0, config: unlimited() });
      try {
        const args = sampleArgs(input, output, '--rate-limit', '0', '--store', store, '--resume', '--concurrency', String(CONCURRENCY));
        const child = spawn('unshare', ['-m', 'sh', '-c', script, process.execPath, process.execPath, CLI, ...args], {
          env: { ...process.env, ...env(sandbox), DISK: disk, OUTPUT: output, RUN: run, DQ_STORE },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const ended = completed(child);
        await checkpointPast(output, 400, ended);
        await writeFile(`${run}.fill`, '');
        const finished = await ended;
        expect(finished.code, finished.stderr).toBe(0);
        const read = (name: string) => readFile(`${run}.${name}`, 'utf8');

        const stderr = await read('first.err');
        expect(Number(await read('first.code')), stderr).toBe(1);
        // Nothing on stderr but the run's JSON log lines and its one error line: no stack trace,
        // no text of LMDB's.
        expect(
          stderr.split('\n').filter((l) => l !== '' && !l.startsWith('{"')),
          stderr,
        ).toEqual([
          expect.stringMatching(
            new RegExp(
              `^dq-csv: store-io: the result store ${store} cannot be used: the disk is full \\(ENOSPC\\); free space on it or give --store a folder on another file system, then rerun \\(or pass --store off\\); input records 1-\\d+ are written and checkpointed; rerun with --resume$`,
            ),
          ),
        ]);
        // The output holds exactly the checkpointed rows, and the store is intact: every entry reads.
        const checkpoint = JSON.parse(await read('output.checkpoint.json')) as { position: { records: number }; sink: { outputBytes: number } };
        expect((await stat(`${run}.output`)).size).toBe(checkpoint.sink.outputBytes);
        expect(checkpoint.position.records).toBeGreaterThanOrEqual(400);
        expect(checkpoint.position.records).toBeLessThan(ROWS);
        expect((await read('files')).split('\n').filter(Boolean)).toEqual(['results.mdb', 'results.mdb-lock']);
        expect((JSON.parse(await read('info')) as { entries: number }).entries).toBeGreaterThanOrEqual(checkpoint.position.records / 2);

        expect(Number(await read('second.code')), await read('second.err')).toBe(0);
        expect(await comparable(output)).toEqual(await comparable(reference.output));
        expect(billable(sandbox)).toBeLessThanOrEqual(reference.distinct + BOUGHT_IN_FLIGHT);
      } finally {
        await sandbox.close();
      }
    },
  );
});
