import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openStore } from '@dq/core/store';

// dq-store with --store left out: it shows and trims the store the connectors use by default,
// $XDG_CACHE_HOME/dq-connectors/store (test/support/isolated-store.ts gives each test its own
// XDG_CACHE_HOME), or the folder DQ_STORE names.
const BIN = fileURLToPath(new URL('../bin/dq-store.js', import.meta.url));
const DAY_MS = 86_400_000;

function dqStore(args: string[], env: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Fills the store `spec` names (undefined: the connectors' default) with one entry 40 days old and `fresh` new ones. */
async function fill(spec: string | undefined, fresh: number): Promise<string> {
  const store = (await openStore(spec))!;
  const old = new Date(Date.now() - 40 * DAY_MS).toISOString();
  await Promise.all([
    store.set('k-old', { status: 'accepted', resultClass: 'A', requestId: 'r-old', checkedAt: old }),
    ...Array.from({ length: fresh }, (_, i) =>
      store.set(`k-${i}`, { status: 'accepted', resultClass: 'A', requestId: `r-${i}`, checkedAt: new Date().toISOString() }),
    ),
  ]);
  const location = store.location;
  await store.close();
  return location;
}

describe('dq-store without --store', () => {
  it('shows and prunes the store the connectors use by default ($XDG_CACHE_HOME/dq-connectors/store)', async () => {
    const location = await fill(undefined, 2);
    expect(location).toBe(join(process.env['XDG_CACHE_HOME']!, 'dq-connectors', 'store'));

    const info = await dqStore(['info', '--json'], { DQ_STORE: undefined });
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ location, entries: 3 });

    const pruned = await dqStore(['prune', '--older-than', '30d'], { DQ_STORE: undefined });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(JSON.parse((await dqStore(['info', '--json'], { DQ_STORE: undefined })).stdout)).toMatchObject({ location, entries: 2 });
  });

  it('uses the folder DQ_STORE names, leaving the default store alone', async () => {
    const elsewhere = join(process.env['XDG_CACHE_HOME']!, 'elsewhere');
    await fill(undefined, 1);
    await fill(elsewhere, 4);
    const info = await dqStore(['info', '--json'], { DQ_STORE: elsewhere });
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ location: elsewhere, entries: 5 });
  });
});
