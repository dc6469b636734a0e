import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { unzipSync } from 'fflate';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { exitCodeFor, LOCK_FILE, readManifest, runSync, verifyTarget } from '../src/index.js';
import { downloadRequests, freshTarget, sandboxWith, syncConfig, removeTargets } from './helpers.js';

let sandbox: Sandbox | undefined;
afterAll(removeTargets);
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

const sha512 = (b: Buffer) => createHash('sha512').update(b).digest('hex');
const DATA_FILES = [
  'post/DE/DE_001.zip',
  'post/DE/DE_002.zip',
  'post/AT/AT_001.zip',
  'post/AT/AT_002.zip',
  'post/INT_EUROPE/INT_EUROPE_001.zip',
  'post/INT_EUROPE/INT_EUROPE_002.zip',
  'autocompletion/DE/AC_DE.zip',
  'autocompletion/AT/AC_AT.zip',
  'phone/DE/PHONE_DE.zip',
  'phone/AT/PHONE_AT.zip',
];

describe('dq-refdata sync against the sandbox', () => {
  it('syncs from empty: every subscribed artifact verified against the server .sha512, manifest, installer and current', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const { summary, error } = await runSync(syncConfig(sandbox.url, target, { software: 'software-bundle:linux' }));
    expect(error).toBeUndefined();
    expect(summary).toMatchObject({ status: 'updated', version: '2026-11-01', previous: undefined, failures: [] });
    expect(summary.notOffered.sort()).toEqual(['autocompletion/INT_EUROPE', 'phone/INT_EUROPE']);
    expect(summary.downloaded.filter((p) => p.startsWith('2026-11-01/')).sort()).toEqual(DATA_FILES.map((f) => `2026-11-01/${f}`).sort());
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');

    const manifest = await readManifest(target);
    const v = manifest.versions['2026-11-01'];
    expect(v?.completedAt).not.toBeNull();
    expect(v?.installer?.path).toBe('2026-11-01/installer/setupRefdata_linux_x64.sh');
    for (const f of v?.files ?? []) {
      const bytes = readFileSync(join(target, f.path));
      expect(f.size).toBe(bytes.length);
      expect(f.sha512).toBe(sha512(bytes));
      const served = await (await fetch(`${sandbox.url}${f.source}.sha512`)).text();
      expect(served.slice(0, 128)).toBe(f.sha512);
      expect(Object.keys(unzipSync(bytes)).length).toBeGreaterThan(0); // a real zip
      expect(Date.parse(f.fetchedAt)).not.toBeNaN();
    }
    expect(manifest.software[0]?.path).toBe('software/software-bundle/linux/software-bundle-3.4.1-linux.zip');
    expect((await verifyTarget(target)).ok).toBe(true);
    // no temporary parts left behind
    for (const f of DATA_FILES) expect(readdirSync(join(target, '2026-11-01', dirname(f))).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('downloads no artifact again on a second sync: only version.txt, the installer and the checksums are fetched', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const cfg = syncConfig(sandbox.url, target);
    await runSync(cfg);
    const before = statSync(join(target, '2026-11-01/post/DE/DE_001.zip')).mtimeMs;
    const requestsBefore = downloadRequests(sandbox);
    const { summary, error } = await runSync(cfg);
    expect(error).toBeUndefined();
    expect(summary).toMatchObject({ status: 'up-to-date', downloaded: [], alreadyVerified: DATA_FILES.length });
    expect(downloadRequests(sandbox) - requestsBefore).toBe(2 + DATA_FILES.length);
    expect(statSync(join(target, '2026-11-01/post/DE/DE_001.zip')).mtimeMs).toBe(before);
  });

  it('hashes placed files on every sync: one corrupted on disk at the same size is downloaded again and reported, never counted up to date', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const cfg = syncConfig(sandbox.url, target);
    await runSync(cfg);
    const file = join(target, '2026-11-01/post/DE/DE_001.zip');
    const good = readFileSync(file);
    const bad = Buffer.from(good);
    const mid = Math.floor(bad.length / 2);
    bad[mid] = bad[mid]! ^ 0xff; // one flipped byte: same size, same mtime resolution
    writeFileSync(file, bad);
    const { summary, error } = await runSync(cfg);
    expect(error).toBeUndefined();
    expect(summary).toMatchObject({ status: 'updated', downloaded: ['2026-11-01/post/DE/DE_001.zip'], alreadyVerified: DATA_FILES.length - 1 });
    expect(summary.warnings.join('\n')).toMatch(/2026-11-01\/post\/DE\/DE_001\.zip on disk does not match the server's checksum/);
    expect(readFileSync(file).equals(good)).toBe(true);
    expect((await verifyTarget(target)).ok).toBe(true);
  });

  it('after the manifest was deleted, keeps the files whose content matches the server checksums and downloads a corrupted one again', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const cfg = syncConfig(sandbox.url, target, { products: 'post', countries: 'DE,AT', levels: '001' });
    await runSync(cfg);
    rmSync(join(target, 'manifest.json'));
    const at = join(target, '2026-11-01/post/AT/AT_001.zip');
    const good = readFileSync(at);
    writeFileSync(at, Buffer.alloc(good.length, 0x41)); // same size, other content
    const de = statSync(join(target, '2026-11-01/post/DE/DE_001.zip')).mtimeMs;
    const { summary, error } = await runSync(cfg);
    expect(error).toBeUndefined();
    expect(summary).toMatchObject({ downloaded: ['2026-11-01/post/AT/AT_001.zip'], alreadyVerified: 1 });
    expect(readFileSync(at).equals(good)).toBe(true);
    expect(statSync(join(target, '2026-11-01/post/DE/DE_001.zip')).mtimeMs).toBe(de);
    const files = (await readManifest(target)).versions['2026-11-01']?.files.map((f) => f.path).sort();
    expect(files).toEqual(['2026-11-01/post/AT/AT_001.zip', '2026-11-01/post/DE/DE_001.zip']);
    expect((await verifyTarget(target)).ok).toBe(true);
  });

  it('resumes bodies the sandbox cuts short and ends with every file verified', async () => {
    sandbox = await sandboxWith({ largeArtifactMiB: 4, cacheDir: join(dirname(freshTarget()), 'cache') });
    sandbox.setFaults({ download: { truncateRate: 0.3 } });
    const target = freshTarget();
    const { summary, error } = await runSync(syncConfig(sandbox.url, target));
    expect(error).toBeUndefined();
    expect(sandbox.stats().faults['download']?.truncations ?? 0).toBeGreaterThan(0);
    expect(summary.resumed.length).toBeGreaterThan(0);
    expect(summary.status).toBe('updated');
    expect((await verifyTarget(target)).ok).toBe(true);
    expect(statSync(join(target, '2026-11-01/post/DE/DE_001.zip')).size).toBeGreaterThan(4 * 1024 * 1024);
  });

  it('downloads a file whole once more when the part an earlier run left was damaged on disk, instead of blaming the server', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const cfg = syncConfig(sandbox.url, target, { products: 'post', countries: 'DE', levels: '001' });
    expect((await runSync(cfg)).error).toBeUndefined();
    // What a crash can leave: the first half of the file as the part (named as the download client
    // names it: a hash of the URL path) with its sidecar, and a damaged block in it.
    const rel = '2026-11-01/post/DE/DE_001.zip';
    const placed = readFileSync(join(target, rel));
    const manifest = await readManifest(target);
    const source = manifest.versions['2026-11-01']?.files.find((f) => f.path === rel)?.source ?? '';
    const part = join(target, dirname(rel), `.dq-download-${createHash('sha256').update(source).digest('hex').slice(0, 16)}.part`);
    const half = Buffer.from(placed.subarray(0, placed.length >> 1));
    half.fill(0, 100, 4196); // a block that never reached the disk
    writeFileSync(part, half);
    writeFileSync(`${part}.json`, JSON.stringify({ urlPath: source, total: placed.length, expectedSha512: sha512(placed) }));
    rmSync(join(target, rel));

    const { summary, error } = await runSync(cfg);
    expect(error).toBeUndefined();
    expect(summary).toMatchObject({ status: 'updated', downloaded: [rel], failures: [] });
    expect(summary.resumed).toEqual([]); // placed from the whole download, not from the part
    expect(readFileSync(join(target, rel)).equals(placed)).toBe(true);
    expect(existsSync(part)).toBe(false);
    expect((await verifyTarget(target)).ok).toBe(true);
  });

  it('never places a corrupted artifact and fails the run with exit code 1, naming the file and both digests', async () => {
    sandbox = await sandboxWith({ corrupt: ['AT_001.zip'] });
    const target = freshTarget();
    const { summary, error } = await runSync(syncConfig(sandbox.url, target));
    expect(summary.status).toBe('failed');
    expect(exitCodeFor(error)).toBe(1);
    expect(summary.failures).toHaveLength(1);
    expect(summary.failures[0]?.code).toBe('checksum-mismatch');
    expect(summary.failures[0]?.message).toMatch(/AT_001\.zip.*expected [0-9a-f]{128}, got [0-9a-f]{128}/);
    expect(existsSync(join(target, '2026-11-01/post/AT/AT_001.zip'))).toBe(false);
    expect(readdirSync(join(target, '2026-11-01/post/AT')).filter((n) => n.startsWith('.'))).toEqual([]);
    expect(existsSync(join(target, '2026-11-01/post/AT/AT_002.zip'))).toBe(true); // the others still arrive
    expect(existsSync(join(target, 'current'))).toBe(false); // the version is not complete
  });

  it('keeps two concurrent syncs of one target apart: one exits with a clear lock message, the other completes', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const cfg = syncConfig(sandbox.url, target);
    const [a, b] = await Promise.all([runSync(cfg), runSync(cfg)]);
    const failed = [a, b].filter((r) => r.error !== undefined);
    expect(failed).toHaveLength(1);
    expect(failed[0]?.error).toMatchObject({ code: 'lock-held' });
    expect((failed[0]?.error as Error).message).toMatch(/another sync \(pid \d+/);
    expect(exitCodeFor(failed[0]?.error)).toBe(75);
    expect((await verifyTarget(target)).ok).toBe(true);
    expect(existsSync(join(target, LOCK_FILE))).toBe(false);
  });

  it('lets a second sync wait for the lock with --lock-wait and then find everything up to date', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const waiting = syncConfig(sandbox.url, target, { lockWait: 30 });
    const [a, b] = await Promise.all([runSync(waiting), runSync(waiting)]);
    expect(a.error).toBeUndefined();
    expect(b.error).toBeUndefined();
    expect([a.summary.status, b.summary.status].sort()).toEqual(['up-to-date', 'updated']);
  });

  it('takes over the stale lock of a process that no longer runs', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    const child = spawn(process.execPath, ['-e', '0']);
    const deadPid = child.pid;
    await new Promise((r) => child.on('exit', r));
    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, LOCK_FILE), JSON.stringify({ pid: deadPid, host: hostname(), startedAt: '2026-01-01T00:00:00Z' }));
    const { summary, error } = await runSync(syncConfig(sandbox.url, target));
    expect(error).toBeUndefined();
    expect(summary.warnings.join(' ')).toMatch(/took over the lock/);
  });

  it('downloads a package named twice in --software once', async () => {
    sandbox = await sandboxWith();
    const once = await runSync(syncConfig(sandbox.url, freshTarget(), { products: 'post', countries: 'DE', levels: '001', software: 'uws:linux' }));
    expect(once.error).toBeUndefined();
    const single = downloadRequests(sandbox);
    const twice = await runSync(syncConfig(sandbox.url, freshTarget(), { products: 'post', countries: 'DE', levels: '001', software: 'uws:linux, uws:linux' }));
    expect(twice.error).toBeUndefined();
    expect(downloadRequests(sandbox) - single).toBe(single);
    expect(twice.summary.downloaded.filter((p) => p.startsWith('software/'))).toEqual(once.summary.downloaded.filter((p) => p.startsWith('software/')));
  });

  it('removes the new current link a sync killed mid-switch left behind, and nothing else of that name', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    mkdirSync(join(target, '2026-10-01'), { recursive: true });
    symlinkSync('2026-10-01', join(target, '.current.0a1b2c3d'));
    writeFileSync(join(target, '.current.notes'), 'kept');
    const { error } = await runSync(syncConfig(sandbox.url, target, { products: 'post', countries: 'DE', levels: '001' }));
    expect(error).toBeUndefined();
    expect(readdirSync(target).filter((n) => n.startsWith('.current.'))).toEqual(['.current.notes']);
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');
  });

  it('neutralises a hostile Content-Disposition name: the package stays inside the target', async () => {
    sandbox = await sandboxWith({ contentDispositionOverride: 'attachment; filename="../../etc/x"' });
    const target = freshTarget();
    const { summary, error } = await runSync(syncConfig(sandbox.url, target, { products: 'post', countries: 'DE', levels: '001', software: 'uws:linux' }));
    expect(error).toBeUndefined();
    expect(existsSync(join(target, 'software/uws/linux/x'))).toBe(true);
    expect(existsSync(join(dirname(target), 'etc'))).toBe(false);
    expect(existsSync(join(target, 'software/etc'))).toBe(false);
    expect(summary.warnings.join(' ')).toContain('../../etc/x');
  });

  it('replaces a right-to-left override in a server file name and shows it escaped in the warning', async () => {
    // U+202E: "\u202Egpj.exe" is displayed as "exe.jpg"
    sandbox = await sandboxWith({ contentDispositionOverride: `attachment; filename*=UTF-8''%E2%80%AEgpj.exe; filename="uws.zip"` });
    const target = freshTarget();
    const { summary, error } = await runSync(syncConfig(sandbox.url, target, { products: 'post', countries: 'DE', levels: '001', software: 'uws:linux' }));
    expect(error).toBeUndefined();
    expect(readdirSync(join(target, 'software/uws/linux'))).toEqual(['_gpj.exe']);
    const warning = summary.warnings.join(' ');
    expect(warning).toContain('"\\u202egpj.exe"');
    expect(warning).toContain('saved as "_gpj.exe"');
    expect(warning).not.toContain('\u202E');
  });

  it('refuses invalid combinations before any request: uws on windows and an unknown product', async () => {
    sandbox = await sandboxWith();
    const target = freshTarget();
    expect(() => syncConfig(sandbox!.url, target, { software: 'uws:windows' })).toThrow(/uws is only available for linux/);
    expect(() => syncConfig(sandbox!.url, target, { products: 'post,gas' })).toThrow(/products/);
    try {
      syncConfig(sandbox.url, target, { software: 'uws:windows' });
    } catch (e) {
      expect(exitCodeFor(e)).toBe(2);
    }
    expect(downloadRequests(sandbox)).toBe(0);
  });

  it('stops with exit code 3 on a refused API key and 75 when the service stays unavailable', async () => {
    sandbox = await sandboxWith();
    const denied = await runSync(syncConfig(sandbox.url, freshTarget(), { apiKey: 'not-a-valid-key' }));
    expect(exitCodeFor(denied.error)).toBe(3);
    expect(JSON.stringify(denied.summary) + (denied.error as Error).message).not.toContain('not-a-valid-key');
    sandbox.setFaults({ download: { errorRate: 1 } });
    const down = await runSync(syncConfig(sandbox.url, freshTarget()));
    expect(down.summary.status).toBe('failed');
    expect(exitCodeFor(down.error)).toBe(75);
  });

  it('removes older versions with --keep only after the new one is complete, switching current', async () => {
    const target = freshTarget();
    sandbox = await sandboxWith({ currentVersion: '2026-10-01' });
    await runSync(syncConfig(sandbox.url, target, { countries: 'DE', products: 'post', levels: '001' }));
    await sandbox.close();
    // The next month: a corrupted file keeps the new version incomplete, so nothing is removed yet.
    sandbox = await sandboxWith({ currentVersion: '2026-11-01', corrupt: ['DE_001.zip'] });
    const blocked = await runSync(syncConfig(sandbox.url, target, { countries: 'DE', products: 'post', levels: '001', keep: 1 }));
    expect(blocked.summary.status).toBe('failed');
    expect(readlinkSync(join(target, 'current'))).toBe('2026-10-01');
    expect(existsSync(join(target, '2026-10-01/post/DE/DE_001.zip'))).toBe(true);
    await sandbox.close();
    sandbox = await sandboxWith({ currentVersion: '2026-11-01' });
    const { summary } = await runSync(syncConfig(sandbox.url, target, { countries: 'DE', products: 'post', levels: '001', keep: 1 }));
    expect(summary).toMatchObject({ status: 'updated', previous: '2026-10-01', version: '2026-11-01', removedVersions: ['2026-10-01'] });
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');
    expect(existsSync(join(target, '2026-10-01'))).toBe(false);
    expect(Object.keys((await readManifest(target)).versions)).toEqual(['2026-11-01']);
  });
});
