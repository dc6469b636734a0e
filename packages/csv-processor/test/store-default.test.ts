import { readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeSampleCsv } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { billable, readCsv, runCli, sampleArgs, summaryOf, useSandbox, useTempDir } from './helpers.js';

// The result store's default folder as a user without XDG_CACHE_HOME gets it: ~/.cache/dq-connectors/store.
// (Every other test sets XDG_CACHE_HOME to a folder of its own, see test/support/isolated-store.ts.)
const ROWS = 200;
const dir = useTempDir();
const sandbox = useSandbox();

describe('dq-csv validate without --store and without XDG_CACHE_HOME', () => {
  it('keeps its store in $HOME/.cache/dq-connectors/store, private (0700 folder, 0600 files), and a second run calls nothing', async () => {
    const home = join(dir, 'home');
    const input = join(dir, 'in.csv');
    await writeFile(input, makeSampleCsv(ROWS, 5));
    const env = { ...sandbox.env(), HOME: home, XDG_CACHE_HOME: undefined };

    const first = await runCli(sampleArgs(input, join(dir, 'out.1.csv'), '--rate-limit', '0'), env);
    expect(first.code, first.stderr).toBe(0);
    const paid = billable(sandbox);
    expect(paid).toBeGreaterThan(0);
    expect(summaryOf(first).apiCalls).toBe(paid);

    const store = join(home, '.cache', 'dq-connectors', 'store');
    expect((await stat(store)).mode & 0o777).toBe(0o700);
    const files = await readdir(store);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect((await stat(join(store, file))).mode & 0o777, file).toBe(0o600);

    const second = await runCli(sampleArgs(input, join(dir, 'out.2.csv'), '--rate-limit', '0'), env);
    expect(second.code, second.stderr).toBe(0);
    expect(billable(sandbox)).toBe(paid); // 0 calls
    expect(summaryOf(second)).toMatchObject({ apiCalls: 0, storeHitRate: 1 });
    expect((await readCsv(join(dir, 'out.2.csv'), { delimiter: ';' })).rows).toHaveLength(ROWS);
  });
});
