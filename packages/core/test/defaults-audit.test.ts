import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openStore } from '@dq/core/store';

// dq-store defaults no other test leaves out: init and clear without --store (the connectors'
// default store), the text output without --json, and the default folder without XDG_CACHE_HOME
// (~/.cache/dq-connectors/store). test/support/isolated-store.ts gives each test its own XDG_CACHE_HOME.
const BIN = fileURLToPath(new URL('../bin/dq-store.js', import.meta.url));

function dqStore(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, DQ_STORE: undefined, ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Mode bits of the store folder and of each file in it. */
async function modes(folder: string): Promise<{ folder: number; files: number[] }> {
  const files = await readdir(folder);
  expect(files.length).toBeGreaterThan(0);
  return { folder: (await stat(folder)).mode & 0o777, files: await Promise.all(files.map(async (f) => (await stat(join(folder, f))).mode & 0o777)) };
}

describe('dq-store without --store and --json', () => {
  it('init creates the default store, private; info shows it as text; clear empties it', async () => {
    const location = join(process.env['XDG_CACHE_HOME']!, 'dq-connectors', 'store');
    const init = await dqStore(['init']);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toBe(`store ${location} is ready\n`);
    const m = await modes(location);
    expect(m.folder).toBe(0o700);
    expect(new Set(m.files)).toEqual(new Set([0o600]));

    const store = (await openStore(undefined))!;
    const checkedAt = new Date().toISOString();
    for (const k of ['a', 'b', 'c']) await store.set(k, { status: 'accepted', resultClass: 'A', requestId: `r-${k}`, checkedAt });
    await store.close();

    const info = await dqStore(['info']);
    expect(info.code, info.stderr).toBe(0);
    expect(info.stdout).toMatch(new RegExp(`^store +${location.replaceAll(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\n`));
    expect(info.stdout).toMatch(/^entries +3$/m);
    expect(info.stdout).toMatch(/^oldest +\d{4}-\d\d-\d\dT/m);

    const clear = await dqStore(['clear']);
    expect(clear.code, clear.stderr).toBe(0);
    expect(clear.stdout).toBe(`removed 3 entries from ${location}\n`);
    expect(JSON.parse((await dqStore(['info', '--json'])).stdout)).toMatchObject({ location, entries: 0 });
  });

  it('without XDG_CACHE_HOME, uses ~/.cache/dq-connectors/store', async () => {
    const home = await mkdtemp(join(tmpdir(), 'dq-store-home-'));
    try {
      const init = await dqStore(['init', '--json'], { HOME: home, XDG_CACHE_HOME: undefined });
      expect(init.code, init.stderr).toBe(0);
      const location = join(home, '.cache', 'dq-connectors', 'store');
      expect(JSON.parse(init.stdout)).toEqual({ command: 'init', store: location });
      expect((await modes(location)).folder).toBe(0o700);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
