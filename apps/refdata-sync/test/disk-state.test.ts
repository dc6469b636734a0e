import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../src/index.js';
import { CLI_BIN, DEFAULT_API_KEY, downloadRequests, freshTarget, removeTargets, sandboxWith, syncFlags } from './helpers.js';

// The state dq-refdata keeps on disk and reads again — manifest.json, the version folders, placed
// files, download parts, the lock — damaged or replaced by hand or by a hostile environment: no
// command hangs on it, follows a link out of the target, or reports success over it.

let sandbox: Sandbox;
let synced: string; // a target after one complete sync, copied by each test
beforeAll(async () => {
  sandbox = await sandboxWith();
  synced = freshTarget();
  const r = await run(syncFlags(synced));
  expect(r.code, r.stderr).toBe(0);
});
afterAll(() => sandbox.close());
afterAll(removeTargets);

const DE = '2026-11-01/post/DE/DE_001.zip';
const AT = '2026-11-01/post/AT/AT_001.zip';
const sha512 = (path: string) => createHash('sha512').update(readFileSync(path)).digest('hex');

/**
 * Runs the CLI; a run still going after 20 s is killed and reported with code -1, so a command
 * that hangs (reading a named pipe) fails the test with its output instead of timing the test out.
 */
function run(args: string[], url?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env['PATH'] ?? '', DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: url ?? sandbox.url };
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI_BIN, ...args], { env, timeout: 20_000, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: number; killed?: boolean }) | null;
      resolve({ code: e === null ? 0 : e.killed ? -1 : Number(e.code ?? 1), stdout, stderr });
    });
  });
}

/** A copy of the synced target, to damage. */
function copyOfSynced(): string {
  const target = freshTarget();
  cpSync(synced, target, { recursive: true, verbatimSymlinks: true });
  return target;
}

const noStack = (stderr: string) => expect(stderr).not.toMatch(/\n\s+at |unexpected error|this is a bug/i);

describe('dq-refdata and what is found where it keeps a file', () => {
  it('a named pipe where a placed file belongs: sync and verify end at once naming it (never hang reading it); moved away, the next sync downloads the file', async () => {
    const target = copyOfSynced();
    const pipe = join(target, DE);
    rmSync(pipe);
    execFileSync('mkfifo', [pipe]);

    const s = await run(syncFlags(target));
    expect(s.code, `sync: ${s.stderr}`).toBe(2);
    expect(s.stderr).toContain(
      `dq-refdata: ${pipe} is a named pipe (FIFO) where dq-refdata keeps a file; it is not read, changed or removed: move it away, then sync again`,
    );
    noStack(s.stderr);
    expect(JSON.parse(s.stdout)).toMatchObject({ status: 'failed', exitCode: 2, code: 'usage' });

    const v = await run(['verify', '--target', target]);
    expect(v.code, `verify: ${v.stderr}`).toBe(1);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: false, problems: [{ path: DE, problem: 'not-a-file' }] });
    expect(v.stderr).toContain(
      `dq-refdata: ${DE}: not-a-file (a named pipe (FIFO), not the file dq-refdata placed; not followed or read: move ${DE} away); then run dq-refdata sync`,
    );

    renameSync(pipe, join(target, '..', 'pipe'));
    const again = await run(syncFlags(target));
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ downloaded: [DE], alreadyVerified: 1 });
    expect((await run(['verify', '--target', target])).code).toBe(0);
  });

  it('a symbolic link to /dev/zero or /etc/passwd where a placed file belongs: not followed (no endless hash), sync exit 2 and verify exit 1 naming the link and where it points', async () => {
    const target = copyOfSynced();
    const passwd = statSync('/etc/passwd');
    for (const to of ['/dev/zero', '/etc/passwd']) {
      const link = join(target, DE);
      rmSync(link);
      symlinkSync(to, link);
      const started = Date.now();
      const s = await run(syncFlags(target));
      expect(s.code, `sync over a link to ${to}: ${s.stderr}`).toBe(2);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(s.stderr).toContain(`${link} is a symbolic link to ${to} where dq-refdata keeps a file; it is not followed, changed or removed: move it away`);
      const v = await run(['verify', '--target', target]);
      expect(v.code, `verify over a link to ${to}: ${v.stderr}`).toBe(1);
      expect(JSON.parse(v.stdout)).toMatchObject({
        ok: false,
        problems: [{ path: DE, problem: 'not-a-file', detail: expect.stringContaining(`a symbolic link to ${to}`) }],
      });
      expect(readlinkSync(link)).toBe(to);
    }
    expect(statSync('/etc/passwd').mtimeMs).toBe(passwd.mtimeMs);
  });

  it('a version folder linked to a folder outside the target: sync writes nothing there (exit 2 naming the link), verify does not pass the files found through it', async () => {
    const target = copyOfSynced();
    const outside = join(dirname(target), 'elsewhere');
    mkdirSync(outside);
    const atDir = join(target, dirname(AT));
    cpSync(atDir, join(outside, 'AT'), { recursive: true });
    rmSync(atDir, { recursive: true });
    symlinkSync(join(outside, 'AT'), atDir);

    const v = await run(['verify', '--target', target]);
    expect(v.code, v.stderr).toBe(1);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: false, problems: [{ path: AT, problem: 'not-a-file' }] });
    expect(v.stderr).toContain(`${dirname(AT)} on its way is a symbolic link to ${join(outside, 'AT')}, not a folder`);

    writeFileSync(join(outside, 'AT', 'AT_001.zip'), 'not the artifact');
    const s = await run(syncFlags(target));
    expect(s.code, s.stderr).toBe(2);
    expect(s.stderr).toContain(
      `${atDir} is a symbolic link to ${join(outside, 'AT')} where dq-refdata keeps a folder; it is not followed, changed or removed: move it away`,
    );
    expect(readFileSync(join(outside, 'AT', 'AT_001.zip'), 'utf8')).toBe('not the artifact');
    expect(readdirSync(join(outside, 'AT'))).toEqual(['AT_001.zip']); // no part, no placed file
  });

  it('a file where a version folder belongs: exit 2 naming it and to move it away, not a bare ENOTDIR', async () => {
    const target = copyOfSynced();
    renameSync(join(target, '2026-11-01'), join(target, '..', 'moved'));
    writeFileSync(join(target, '2026-11-01'), 'a file');
    const s = await run(syncFlags(target));
    expect(s.code, s.stderr).toBe(2);
    expect(s.stderr).toContain(
      `dq-refdata: ${join(target, '2026-11-01')} is a file where dq-refdata keeps a folder; it is not read, changed or removed: move it away`,
    );
    expect(s.stderr).not.toContain('ENOTDIR');
    noStack(s.stderr);
    expect(readFileSync(join(target, '2026-11-01'), 'utf8')).toBe('a file');
  });
});

describe('dq-refdata and download parts left in the target', () => {
  // The part the download client grows AT_001.zip in: `.dq-download-<first 16 hex digits of the SHA-256 of its URL path>.part`.
  const urlPath = '/download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip';
  const partName = `.dq-download-${createHash('sha256').update(urlPath).digest('hex').slice(0, 16)}.part`;

  it('a part that is a link to a file outside the target, or a named pipe: removed, never written through or blocked on, and the file placed; a regular part of another download is discarded and the file placed', async () => {
    const target = copyOfSynced();
    rmSync(join(target, AT));
    const part = join(target, dirname(AT), partName);
    const outside = join(dirname(target), 'written-through-the-part');
    symlinkSync(outside, part);
    const s = await run(syncFlags(target));
    expect(s.code, s.stderr).toBe(0);
    expect(existsSync(outside)).toBe(false);
    expect(lstatSync(join(target, AT)).isFile()).toBe(true);
    expect((await run(['verify', '--target', target])).code).toBe(0);

    rmSync(join(target, AT));
    execFileSync('mkfifo', [part]);
    const p = await run(syncFlags(target));
    expect(p.code, p.stderr).toBe(0);
    expect(lstatSync(join(target, AT)).isFile()).toBe(true);
    expect(readdirSync(join(target, dirname(AT)))).toEqual(['AT_001.zip']);

    // A part of the same name left by another download (its sidecar names another URL), of another size.
    rmSync(join(target, AT));
    writeFileSync(part, Buffer.alloc(50_000, 7));
    writeFileSync(`${part}.json`, JSON.stringify({ urlPath: urlPath.replace('2026-11-01', '2026-10-01'), total: 50_000, expectedSha512: null }));
    const r = await run(syncFlags(target));
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ downloaded: [AT], resumed: [] });
    expect(readdirSync(join(target, dirname(AT)))).toEqual(['AT_001.zip']);
    expect((await run(['verify', '--target', target])).code).toBe(0);
  });
});

describe('dq-refdata and a damaged manifest.json or lock', () => {
  it('a named pipe, a folder or a link to /dev/zero where manifest.json belongs: sync, verify and status end at once naming it (exit 2)', async () => {
    const target = copyOfSynced();
    const manifest = join(target, 'manifest.json');
    const cases: Array<[string, () => void]> = [
      ['a named pipe (FIFO)', () => execFileSync('mkfifo', [manifest])],
      ['a folder', () => mkdirSync(manifest)],
      ['a symbolic link to /dev/zero', () => symlinkSync('/dev/zero', manifest)],
    ];
    for (const [found, make] of cases) {
      rmSync(manifest, { recursive: true, force: true });
      make();
      for (const args of [syncFlags(target), ['verify', '--target', target], ['status', '--target', target]]) {
        const r = await run(args);
        expect(r.code, `${args[0]} with ${found}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(`dq-refdata: ${manifest} is ${found} where dq-refdata keeps a file`);
        noStack(r.stderr);
      }
    }
  });

  it('a manifest of a newer format, one listing a path twice, and one far too large: refused naming the file and why, never read whole or half-trusted', async () => {
    const target = copyOfSynced();
    const path = join(target, 'manifest.json');
    const good = readFileSync(path, 'utf8');
    const m = JSON.parse(good) as { schema: number; versions: Record<string, { files: Array<{ path: string; sha512: string }> }> };

    writeFileSync(path, JSON.stringify({ ...m, schema: 2 }));
    const newer = await run(syncFlags(target));
    expect(newer.code, newer.stderr).toBe(1);
    expect(newer.stderr).toContain(`${path} is of manifest format 2, written by a newer version of dq-refdata; this one reads format 1`);

    // A stale second entry for DE_001.zip: verify would fail for ever over a file sync finds up to date.
    const twice = structuredClone(m);
    const files = twice.versions['2026-11-01']!.files;
    files.push({ ...files[0]!, sha512: 'f'.repeat(128) });
    writeFileSync(path, JSON.stringify(twice));
    for (const args of [syncFlags(target), ['verify', '--target', target]]) {
      const r = await run(args);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(`${path} is not a dq-refdata manifest (versions.2026-11-01: path "${files[0]!.path}" is listed twice); move it away`);
    }

    writeFileSync(path, good);
    truncateSync(path, 65 * 1024 * 1024); // sparse: a manifest padded to 65 MiB
    const huge = await run(['status', '--target', target]);
    expect(huge.code, huge.stderr).toBe(1);
    expect(huge.stderr).toContain(`${path} is not a dq-refdata manifest (${65 * 1024 * 1024} bytes, more than the ${64 * 1024 * 1024} a manifest may hold)`);
    noStack(huge.stderr);
  });

  it('a named pipe where the lock file belongs: sync exit 2 naming it, status does not hang on it', async () => {
    const target = copyOfSynced();
    const lock = join(target, LOCK_FILE);
    execFileSync('mkfifo', [lock]);
    const requests = downloadRequests(sandbox);
    const s = await run(syncFlags(target));
    expect(s.code, s.stderr).toBe(2);
    expect(s.stderr).toContain(`dq-refdata: ${lock} is a named pipe (FIFO) where dq-refdata keeps a file`);
    expect(downloadRequests(sandbox)).toBe(requests);
    const st = await run(['status', '--target', target]);
    expect(st.code, st.stderr).toBe(0);
    const status = JSON.parse(st.stdout) as { current: string; lockedBy?: number };
    expect(status.current).toBe('2026-11-01');
    expect(status.lockedBy).toBeUndefined();
  });
});

describe('dq-refdata and a version.txt going back', () => {
  it('the server announces a version older than the one in use (a release withdrawn): synced and switched to with a warning saying so; --keep 1 then keeps only the version in use', async () => {
    const target = copyOfSynced();
    const older = await sandboxWith({ currentVersion: '2026-10-01' });
    try {
      const r = await run([...syncFlags(target), '--keep', '1'], older.url);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(
        'dq-refdata: warning: version.txt announces 2026-10-01, older than 2026-11-01 which current pointed to (the server went back a version): 2026-10-01 is synced and current points to it once it is complete',
      );
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'updated', version: '2026-10-01', previous: '2026-11-01', removedVersions: ['2026-11-01'] });
      expect(readlinkSync(join(target, 'current'))).toBe('2026-10-01');
      expect(readdirSync(target).sort()).toEqual(['2026-10-01', 'current', 'manifest.json']);
      expect((await run(['verify', '--target', target])).code).toBe(0);
    } finally {
      await older.close();
    }
  });
});

describe('dq-refdata and a version the server published again with other files', () => {
  it('one of the new files fails its checksum: the version current points to is a mix of old and new files, so verify and status no longer call it complete until a sync replaced them all', async () => {
    const target = copyOfSynced();
    // Seed 12: the same version 2026-11-01 with other bytes; AT_001.zip served damaged.
    const republished = await sandboxWith({ corrupt: ['AT_001.zip'] }, 12);
    try {
      const r = await run(syncFlags(target), republished.url);
      expect(r.code, r.stderr).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', code: 'checksum-mismatch', downloaded: [DE] });
      expect(r.stderr).toContain(`warning: ${AT} on disk does not match the server's checksum`);

      const v = await run(['verify', '--target', target]);
      expect(v.code, v.stdout).toBe(1);
      expect(v.stderr).toContain(
        "dq-refdata: current: current-pointer (points to 2026-11-01, which manifest.json lists as not complete: a sync found files of it that no longer match the server's and has not replaced them all yet; run dq-refdata sync",
      );
      expect(JSON.parse((await run(['status', '--target', target])).stdout)).toMatchObject({ versions: [{ version: '2026-11-01', complete: false }] });
    } finally {
      await republished.close();
    }
    const fixed = await sandboxWith({}, 12);
    try {
      const r = await run(syncFlags(target), fixed.url);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ downloaded: [AT], alreadyVerified: 1 });
      expect((await run(['verify', '--target', target])).code).toBe(0);
    } finally {
      await fixed.close();
    }
  });
});

describe('dq-refdata killed mid-download', () => {
  it('kill -9 during a download, then a sync again: the lock left is taken over, the file placed before is not downloaded again, the cut one resumes', async () => {
    // AT_001.zip of 4 MiB (written to its part a block of 1 MiB at a time), sent by a proxy in
    // front of the sandbox at 64 KiB every 20 ms, so the sync can be killed in the middle of it.
    const big = await sandboxWith({ largeArtifact: 'AT_001.zip', largeArtifactMiB: 4 });
    const proxy = createServer((req, res) => {
      const headers: Record<string, string> = {};
      if (req.headers.authorization) headers['authorization'] = req.headers.authorization;
      if (req.headers.range) headers['range'] = req.headers.range;
      void fetch(`${big.url}${req.url ?? '/'}`, { headers }).then(async (up) => {
        const out: Record<string, string> = {};
        up.headers.forEach((v, k) => {
          if (k !== 'content-encoding' && k !== 'transfer-encoding') out[k] = v;
        });
        const body = Buffer.from(await up.arrayBuffer());
        res.writeHead(up.status, out);
        if (!(req.url ?? '').endsWith('/AT_001.zip')) return void res.end(body);
        for (let i = 0; i < body.length && !res.destroyed; i += 64 * 1024) {
          res.write(body.subarray(i, i + 64 * 1024));
          await new Promise((r) => setTimeout(r, 20));
        }
        res.end();
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const target = freshTarget();
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const child = spawn(process.execPath, [CLI_BIN, ...syncFlags(target)], {
        env: { PATH: process.env['PATH'] ?? '', DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: url },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let childErr = '';
      child.stderr?.on('data', (c: Buffer) => (childErr += c.toString()));
      const closed = new Promise((r) => child.once('close', r));
      const atDir = join(target, dirname(AT));
      const partBytes = () => {
        try {
          return readdirSync(atDir)
            .filter((n) => n.endsWith('.part'))
            .reduce((n, f) => n + statSync(join(atDir, f)).size, 0);
        } catch {
          return 0;
        }
      };
      for (const until = Date.now() + 30_000; partBytes() < 2 * 1024 ** 2 && Date.now() < until;) await new Promise((r) => setTimeout(r, 10));
      child.kill('SIGKILL');
      await closed;
      const held = partBytes();
      expect(held, `the killed sync: ${childErr}`).toBeGreaterThanOrEqual(2 * 1024 ** 2);
      expect(held).toBeLessThan(4 * 1024 ** 2);
      expect(existsSync(join(target, LOCK_FILE))).toBe(true);
      expect(existsSync(join(target, DE))).toBe(true);
      expect(existsSync(join(target, AT))).toBe(false);

      const before = downloadRequests(big);
      const r = await run(syncFlags(target), big.url);
      expect(r.code, r.stderr).toBe(0);
      const summary = JSON.parse(r.stdout) as { downloaded: string[]; resumed: string[]; alreadyVerified: number; warnings: string[] };
      expect(summary).toMatchObject({ status: 'updated', downloaded: [AT], resumed: [AT], alreadyVerified: 1 });
      expect(summary.warnings).toContain('took over the lock of a sync that is no longer running');
      // version.txt, the installer, two checksums and the rest of AT_001.zip: DE_001.zip is not fetched again.
      expect(downloadRequests(big) - before).toBe(5);
      expect(existsSync(join(target, LOCK_FILE))).toBe(false);
      const served = await (await fetch(`${big.url}/download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip.sha512`)).text();
      expect(sha512(join(target, AT))).toBe(served.slice(0, 128));
      expect((await run(['verify', '--target', target])).code).toBe(0);
    } finally {
      proxy.close();
      await big.close();
    }
  }, 90_000);
});
