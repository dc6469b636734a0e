import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, freshTarget, removeTargets, sandboxWith } from './helpers.js';

// dq-refdata with its optional flags left out: sync without --keep and --levels, phone-describe
// without --cache, --target and --max-age (the cache then lives in the user's cache folder).
const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');
const HOUR_MS = 3_600_000;

function run(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { PATH: process.env['PATH'] ?? '', DQ_API_KEY: DEFAULT_API_KEY, ...env }, cwd },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

const sandboxes: Sandbox[] = [];
const folders: string[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.close()));
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});
afterAll(removeTargets);

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dq-refdata-defaults-'));
  folders.push(dir);
  return dir;
}

async function sandbox(download: Record<string, unknown> = {}): Promise<Sandbox> {
  const s = await sandboxWith(download);
  sandboxes.push(s);
  return s;
}

describe('dq-refdata sync without --keep and --levels', () => {
  it('keeps the two newest complete versions and fetches post level 001 only', async () => {
    const target = freshTarget();
    const cwd = folder();
    const sync = async (version: string) => {
      const s = await sandbox({ currentVersion: version });
      const args = [
        'sync',
        '--download-url',
        s.url,
        '--target',
        target,
        '--products',
        'post',
        '--countries',
        'DE',
        '--release',
        'release-v3',
        '--platform',
        'linux_x64',
      ];
      const r = await run(args, {}, cwd);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as { status: string; version: string; removedVersions?: string[] };
    };
    expect(await sync('2026-09-01')).toMatchObject({ status: 'updated', version: '2026-09-01' });
    expect(readdirSync(join(target, '2026-09-01', 'post', 'DE'))).toEqual(['DE_001.zip']);
    await sync('2026-10-01');
    expect(existsSync(join(target, '2026-09-01'))).toBe(true); // two versions: both kept
    const third = await sync('2026-11-01');
    expect(third).toMatchObject({ status: 'updated', version: '2026-11-01', removedVersions: ['2026-09-01'] });
    expect(existsSync(join(target, '2026-09-01'))).toBe(false);
    expect(existsSync(join(target, '2026-10-01', 'post', 'DE', 'DE_001.zip'))).toBe(true);
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');
    expect((await run(['verify', '--target', target], {}, cwd)).code).toBe(0);
  });
});

describe('dq-refdata phone-describe without --cache, --target and --max-age', () => {
  it('caches in $XDG_CACHE_HOME/dq-refdata, serves the cache for a day and asks the service again after it', async () => {
    const s = await sandbox();
    const cwd = folder();
    const xdg = join(folder(), 'xdg');
    const cacheFile = join(xdg, 'dq-refdata', 'phone-describe.json');
    const describe = async () => {
      const r = await run(['phone-describe', '--realtime-url', s.url], { XDG_CACHE_HOME: xdg, HOME: join(cwd, 'home') }, cwd);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as { source: string; cacheFile: string };
    };
    expect(await describe()).toMatchObject({ source: 'service', cacheFile });
    const age = (hours: number) => {
      const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as { fetchedAt: string };
      writeFileSync(cacheFile, JSON.stringify({ ...cached, fetchedAt: new Date(Date.now() - hours * HOUR_MS).toISOString() }));
    };
    age(23);
    expect(await describe()).toMatchObject({ source: 'cache' });
    age(25);
    expect(await describe()).toMatchObject({ source: 'service' });
    expect(await describe()).toMatchObject({ source: 'cache' }); // the refreshed answer was cached
  });

  it('with XDG_CACHE_HOME empty (unset in effect), caches in ~/.cache/dq-refdata, not in the working folder', async () => {
    const s = await sandbox();
    const cwd = folder();
    const home = join(folder(), 'home');
    mkdirSync(home);
    const r = await run(['phone-describe', '--realtime-url', s.url], { XDG_CACHE_HOME: '', HOME: home }, cwd);
    expect(r.code, r.stderr).toBe(0);
    const cacheFile = join(home, '.cache', 'dq-refdata', 'phone-describe.json');
    expect(JSON.parse(r.stdout)).toMatchObject({ source: 'service', cacheFile });
    expect(existsSync(cacheFile)).toBe(true);
    expect(readdirSync(cwd)).toEqual([]);
  });
});
