import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../src/lock.js';
import { DEFAULT_API_KEY, downloadRequests, freshTarget, removeTargets, runCli, sandboxWith } from './helpers.js';

// Defaults no other test leaves out on the command line while asserting their effect: --lock-wait
// (0 s: a target another sync holds is given up at once) and --software (none: reference data only). The lock here is held by this test's own process (alive, on
// this host), as a sync that is still running would hold it.
let sandbox: Sandbox | undefined;
afterAll(async () => {
  await sandbox?.close();
  removeTargets();
});

describe('dq-refdata sync without --lock-wait', () => {
  it('exits 75 at once naming the pid of the sync that holds the target, and downloads nothing', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    mkdirSync(target);
    writeFileSync(join(target, LOCK_FILE), JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString() }));
    const args = ['sync', '--target', target, '--products', 'post', '--countries', 'DE', '--release', 'release-v3', '--platform', 'linux_x64'];
    const started = Date.now();
    const r = await runCli(args, { DQ_DOWNLOAD_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
    const elapsed = Date.now() - started;
    expect(r.code, r.stderr).toBe(75);
    expect(r.stderr).toContain(`pid ${process.pid}`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(elapsed).toBeLessThan(5_000); // no wait for the lock (a Node start-up is well under this)
    expect(downloadRequests(sandbox)).toBe(0);
  });
});

describe('dq-refdata sync without --software', () => {
  it('fetches reference data only: no software package in the target or its manifest', async () => {
    sandbox ??= await sandboxWith();
    const target = freshTarget();
    const args = ['sync', '--target', target, '--products', 'post', '--countries', 'DE', '--release', 'release-v3', '--platform', 'linux_x64'];
    const r = await runCli(args, { DQ_DOWNLOAD_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'updated' });
    expect(existsSync(join(target, 'software'))).toBe(false);
    const manifest = JSON.parse(readFileSync(join(target, 'manifest.json'), 'utf8')) as { software?: unknown[] };
    expect(manifest.software ?? []).toEqual([]);
  });
});
