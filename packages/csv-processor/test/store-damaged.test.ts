import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeSampleCsv } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { billable, completed, runCli, sampleArgs, summaryOf, unlimited, useSandbox, useTempDir } from './helpers.js';

// An embedded result store whose file was damaged on disk (a crash of the machine, a disk fault):
// the run stops before any call with one line naming the store and `dq-store clear`, which starts
// the store afresh (README "Why LMDB").

const dir = useTempDir();
const sandbox = useSandbox(unlimited());
const DQ_STORE = fileURLToPath(new URL('../../core/bin/dq-store.js', import.meta.url));

describe('dq-csv with a damaged result store', () => {
  it('stops before any call with one line naming the store and dq-store clear; after the clear the run completes', { timeout: 120_000 }, async () => {
    const input = join(dir, 'in.csv');
    await writeFile(input, makeSampleCsv(200, 5));
    const store = join(dir, 'store');
    const args = (output: string) => sampleArgs(input, output, '--rate-limit', '0', '--store', store);

    const first = await runCli(args(join(dir, 'first.csv')), sandbox.env());
    expect(first.code, first.stderr).toBe(0);
    const paid = billable(sandbox);
    // The start of the store's file overwritten.
    const handle = await open(join(store, 'results.mdb'), 'r+');
    await handle.write(Buffer.alloc(8192, 0x5a), 0, 8192, 0);
    await handle.close();

    const output = join(dir, 'second.csv');
    const stopped = await runCli(args(output), sandbox.env());
    expect({ code: stopped.code, signal: stopped.signal }, stopped.stderr).toEqual({ code: 1, signal: null });
    expect(stopped.stderr).toMatch(
      new RegExp(`^dq-csv: store-io: the result store ${store} is damaged \\(.+\\); its answers cannot be read: run dq-store clear --store ${store} .*\\n$`),
    );
    expect(summaryOf(stopped)).toMatchObject({ outcome: 'stopped', exitCode: 1, apiCalls: 0 });
    expect(billable(sandbox)).toBe(paid);
    expect(existsSync(output)).toBe(false);

    const clear = await completed(spawn(process.execPath, [DQ_STORE, 'clear', '--store', store], { stdio: ['ignore', 'pipe', 'pipe'] }));
    expect(clear.code, clear.stderr).toBe(0);
    const again = await runCli(args(output), sandbox.env());
    expect(again.code, again.stderr).toBe(0);
    expect(summaryOf(again)).toMatchObject({ outcome: 'done', rows: 200, apiCalls: paid });
  });
});

describe('dq-csv with --store naming a file', () => {
  it('stops before any call with exit 2 and one line saying it is not a folder', { timeout: 60_000 }, async () => {
    const input = join(dir, 'in-file-store.csv');
    await writeFile(input, makeSampleCsv(20, 6));
    const file = join(dir, 'notes.txt');
    await writeFile(file, 'not a store\n');
    const before = billable(sandbox);
    for (const store of [file, join(file, 'store')]) {
      const run = await runCli(sampleArgs(input, join(dir, 'file-store.csv'), '--store', store), sandbox.env());
      expect({ store, code: run.code }, run.stderr).toEqual({ store, code: 2 });
      expect(run.stderr).toMatch(new RegExp(`^dq-csv: usage: the result store ${store} is not a folder \\(.+\\): give --store a folder .*or pass --store off`));
      expect(summaryOf(run)).toMatchObject({ outcome: 'stopped', exitCode: 2, apiCalls: 0 });
    }
    expect(billable(sandbox)).toBe(before);
    expect(await readFile(file, 'utf8')).toBe('not a store\n');
  });
});
