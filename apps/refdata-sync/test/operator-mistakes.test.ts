import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../src/index.js';
import { CLI_BIN, DEFAULT_API_KEY, downloadRequests, freshTarget, removeTargets, runCli, sandboxWith, syncFlags } from './helpers.js';

// What an operator gets wrong (another release into a target in use, a folder where `current` is
// kept) and how a run stops when asked to (SIGINT/SIGTERM while it waits or hashes).

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await sandboxWith();
});
afterAll(() => sandbox.close());
afterAll(removeTargets);

const env = () => ({ DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: sandbox.url });
const sha512 = (path: string) => createHash('sha512').update(readFileSync(path)).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The CLI as a child process that can be signalled; `done` resolves with how it ended and how long after `kill` it did. */
function startCli(args: string[]) {
  const child = spawn(process.execPath, [CLI_BIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env() } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let signalledAt = 0;
  const done = new Promise<{ code: number | null; stdout: string; stderr: string; msAfterSignal: number }>((resolve) =>
    child.once('close', (code: number | null) => resolve({ code, stdout, stderr, msAfterSignal: Date.now() - signalledAt })),
  );
  return {
    child,
    done,
    kill(sig: NodeJS.Signals) {
      signalledAt = Date.now();
      child.kill(sig);
    },
  };
}

/** Waits until process `pid` has `file` open (it is reading it), as Linux shows under /proc. */
async function untilOpens(pid: number, file: string): Promise<void> {
  for (const until = Date.now() + 20_000; Date.now() < until; await sleep(20)) {
    const fds = (() => {
      try {
        return readdirSync(`/proc/${pid}/fd`);
      } catch {
        return [];
      }
    })();
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === file) return;
      } catch {
        // closed meanwhile
      }
    }
  }
  throw new Error(`pid ${pid} never opened ${file}`);
}

/** A synced target whose DE_001.zip is a 4 GiB sparse file (hashing it takes many seconds), recorded so in the manifest. */
async function targetWithHugeFile(): Promise<{ target: string; huge: string }> {
  const target = freshTarget();
  expect((await runCli(syncFlags(target), env())).code).toBe(0);
  const huge = join(target, '2026-11-01/post/DE/DE_001.zip');
  truncateSync(huge, 4 * 1024 ** 3);
  const manifestPath = join(target, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { versions: Record<string, { files: Array<{ path: string; size: number }> }> };
  for (const f of manifest.versions['2026-11-01']?.files ?? []) if (f.path.endsWith('DE_001.zip')) f.size = 4 * 1024 ** 3;
  writeFileSync(manifestPath, JSON.stringify(manifest));
  return { target, huge };
}

/**
 * The sandbox behind a proxy on a free port: `intercept` answers the requests it wants to (returns
 * true), the others go to the sandbox.
 */
async function proxied(intercept: (req: IncomingMessage, res: ServerResponse) => boolean): Promise<{ proxy: Server; url: string }> {
  const proxy = createServer((req, res) => {
    if (intercept(req, res)) return;
    const headers: Record<string, string> = {};
    if (req.headers.authorization) headers['authorization'] = req.headers.authorization;
    if (req.headers.range) headers['range'] = req.headers.range;
    void fetch(`${sandbox.url}${req.url ?? '/'}`, { headers }).then(async (up) => {
      const out: Record<string, string> = {};
      up.headers.forEach((v, k) => {
        if (k !== 'content-encoding' && k !== 'transfer-encoding') out[k] = v;
      });
      res.writeHead(up.status, out).end(Buffer.from(await up.arrayBuffer()));
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return { proxy, url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` };
}

describe('dq-refdata and operator mistakes', () => {
  it('a sync with another --release into a target whose current version holds release-v3: exit 2 naming both, the files current points to untouched', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    const files = ['2026-11-01/post/DE/DE_001.zip', '2026-11-01/post/AT/AT_001.zip'];
    const before = files.map((f) => sha512(join(target, f)));
    const manifestBefore = readFileSync(join(target, 'manifest.json'), 'utf8');
    const requests = downloadRequests(sandbox);

    const r = await runCli(syncFlags(target, 'release-v2'), env());
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `dq-refdata: ${target} holds version 2026-11-01 of release-v3, which current points to; syncing release-v2 into it would replace its files one by one, a mix of both releases if it stops: give release-v2 its own --target (or keep --release release-v3)`,
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 2, code: 'usage' });
    expect(files.map((f) => sha512(join(target, f)))).toEqual(before);
    expect(readFileSync(join(target, 'manifest.json'), 'utf8')).toBe(manifestBefore);
    expect(downloadRequests(sandbox) - requests).toBe(1); // version.txt only
    expect((await runCli(['verify', '--target', target])).code).toBe(0);
  });

  it('a folder where current belongs: exit 2 saying to move it away, its content untouched; the next sync after that switches without downloading again', async () => {
    const target = freshTarget();
    mkdirSync(join(target, 'current'), { recursive: true });
    writeFileSync(join(target, 'current', 'notes.txt'), 'mine');
    const r = await runCli(syncFlags(target), env());
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `dq-refdata: ${join(target, 'current')} is a directory, not the symbolic link dq-refdata keeps there to point at the version in use; move it away, then sync again (the files placed are kept)`,
    );
    expect(r.stderr).not.toMatch(/EISDIR|\n\s+at /);
    expect(readFileSync(join(target, 'current', 'notes.txt'), 'utf8')).toBe('mine');

    mkdirSync(join(target, '..', 'moved'));
    renameSync(join(target, 'current'), join(target, '..', 'moved', 'current'));
    const again = await runCli(syncFlags(target), env());
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'updated', downloaded: [], alreadyVerified: 2 });
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');
  });

  it('a lock that this host cannot check (a sync of another host, or damaged): exit 75 saying when to delete it; after --lock-wait, that it waited', async () => {
    const target = freshTarget();
    mkdirSync(target, { recursive: true });
    const lock = join(target, LOCK_FILE);
    writeFileSync(lock, JSON.stringify({ pid: 4242, host: 'etl-old-7', startedAt: '2026-11-02T03:00:00.000Z' }));
    const other = await runCli(syncFlags(target), env());
    expect(other.code, other.stderr).toBe(75);
    expect(other.stderr).toContain(
      `dq-refdata: another sync (pid 4242 on etl-old-7, since 2026-11-02T03:00:00.000Z) holds ${lock}; try again later, or pass --lock-wait <seconds> to wait for it. This host cannot tell whether it still runs: if no sync runs on etl-old-7 any more (the machine went down), delete ${lock}`,
    );

    writeFileSync(lock, '{"pid": 42');
    const damaged = await runCli([...syncFlags(target), '--lock-wait', '1'], env());
    expect(damaged.code, damaged.stderr).toBe(75);
    expect(damaged.stderr).toContain(
      `dq-refdata: another sync holds ${lock}; waited 1 s: try again later, or pass a longer --lock-wait. The lock names no owner (damaged?): if no sync runs on this target, delete ${lock}`,
    );
  });

  it('a subscribed artifact the server does not have (a country or level not offered): exit 1 naming it and the flags to check, not the base URL; verify of that target, with no version complete yet, fails too', async () => {
    const target = freshTarget();
    const r = await runCli(
      ['sync', '--target', target, '--products', 'post', '--countries', 'DE,LI', '--release', 'release-v3', '--platform', 'linux_x64'],
      env(),
    );
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /dq-refdata: post\/LI\/LI_001\.zip of version 2026-11-01 is not on the download server \(HTTP 404 for \/download\/v1\/data\/post\/LI\/release-v3\/2026-11-01\/LI_001\.zip\.sha512\): check --products, --countries and --levels against what the platform offers; the version stays incomplete and current is not switched \[request id [0-9a-f-]+\]/,
    );
    expect(r.stderr).not.toContain('check the base URL');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 1, downloaded: ['2026-11-01/post/DE/DE_001.zip'] });

    // Nothing in the target is usable yet: verify must not pass it.
    const v = await runCli(['verify', '--target', target]);
    expect(v.code, v.stdout).toBe(1);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: false, problems: [{ path: 'current', problem: 'current-pointer' }] });
    expect(v.stderr).toContain(
      'dq-refdata: current: current-pointer (missing: no version of this target is complete yet, so it holds nothing to use; run dq-refdata sync until it completes one',
    );
  });

  it('a .sha512 that is no checksum (an error page of a proxy): that file fails naming what to do, the other files are still placed', async () => {
    // The sandbox behind a proxy that answers one checksum request with an HTML page.
    const { proxy, url } = await proxied((req, res) => {
      if (!req.url?.endsWith('/AT_001.zip.sha512')) return false;
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Service temporarily unavailable</body></html>\n');
      return true;
    });
    try {
      const target = freshTarget();
      const args = [
        'sync',
        '--download-url',
        url,
        '--target',
        target,
        '--products',
        'post',
        '--countries',
        'AT,DE',
        '--release',
        'release-v3',
        '--platform',
        'linux_x64',
      ];
      const r = await runCli(args, env());
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(
        'dq-refdata: /download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip.sha512 does not start with a 128-digit hex SHA-512; cannot verify AT_001.zip; the file was not placed: sync again later, and report it if it persists',
      );
      expect(JSON.parse(r.stdout)).toMatchObject({
        status: 'failed',
        exitCode: 1,
        code: 'checksum-file-invalid',
        downloaded: ['2026-11-01/post/DE/DE_001.zip'],
      });
      expect(readdirSync(target)).not.toContain('current');
    } finally {
      proxy.close();
    }
  });

  it("the platform's installer not on the download server (404): exit 1 naming it and --platform, the data files still placed; current switched by the next sync once it is there, nothing fetched again", async () => {
    const { proxy, url } = await proxied((req, res) => {
      if (!req.url?.endsWith('/setupRefdata_linux_x64.sh')) return false;
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not found"}');
      return true;
    });
    const target = freshTarget();
    try {
      const r = await runCli([...syncFlags(target), '--download-url', url], env());
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(
        'dq-refdata: the installer setupRefdata_linux_x64.sh of version 2026-11-01 (--platform linux_x64) is not on the download server (HTTP 404 for /download/v1/data/post/setupRefdata_linux_x64.sh): check --platform',
      );
      expect(JSON.parse(r.stdout)).toMatchObject({
        status: 'failed',
        exitCode: 1,
        downloaded: ['2026-11-01/post/DE/DE_001.zip', '2026-11-01/post/AT/AT_001.zip'],
      });
      expect(readdirSync(target)).not.toContain('current');
    } finally {
      proxy.close();
    }
    const again = await runCli(syncFlags(target), env());
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'updated', downloaded: [], alreadyVerified: 2 });
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');
  });

  it('a hand-edited manifest.json naming a version or file outside the target: refused naming the entry, nothing outside removed', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    const beside = join(target, '..', 'beside.txt');
    writeFileSync(beside, 'not dq-refdata data');
    const manifestPath = join(target, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { current: string; versions: Record<string, { completedAt: string | null }> };
    const v = manifest.versions['2026-11-01'];
    // Sorted before every real version, so --keep 1 would remove it first: join(target, '..').
    manifest.versions['..'] = { ...structuredClone(v), completedAt: '2026-10-02T00:00:00.000Z' } as never;
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const r = await runCli([...syncFlags(target), '--keep', '1'], env());
    expect(readFileSync(beside, 'utf8')).toBe('not dq-refdata data');
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `dq-refdata: ${manifestPath} is not a dq-refdata manifest (versions: ".." is no version (yyyy-mm-01)); move it away to start afresh`,
    );

    delete manifest.versions['..'];
    (v as unknown as { files: Array<{ path: string }> }).files[0]!.path = '../beside.txt';
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const check = await runCli(['verify', '--target', target]);
    expect(check.code, check.stderr).toBe(1);
    expect(check.stderr).toContain(`is not a dq-refdata manifest (versions.2026-11-01: path "../beside.txt" leads outside the target)`);
  });

  it('status after a sync was killed (kill -9): the lock it left names no running sync, so status does not report the target as locked', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => dead.once('close', r));
    writeFileSync(join(target, LOCK_FILE), JSON.stringify({ pid: dead.pid, host: hostname(), startedAt: new Date().toISOString() }));
    const r = await runCli(['status', '--target', target]);
    expect(r.code, r.stderr).toBe(0);
    const status = JSON.parse(r.stdout) as { current: string; lockedBy?: number };
    expect(status.current).toBe('2026-11-01');
    expect(status.lockedBy).toBeUndefined();

    writeFileSync(join(target, LOCK_FILE), JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString() }));
    expect(JSON.parse((await runCli(['status', '--target', target])).stdout)).toMatchObject({ lockedBy: process.pid });
  });

  it('current pointed elsewhere by hand (a rollback): the sync that points it back says so in a warning, not silently', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    rmSync(join(target, 'current'));
    symlinkSync('2026-10-01', join(target, 'current'));
    const r = await runCli(syncFlags(target), env());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      'dq-refdata: warning: current pointed to 2026-10-01, not to 2026-11-01 where the last sync left it (changed by hand?); it points to 2026-11-01 again: to keep another version in use, stop the scheduled sync of this target',
    );
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');
  });

  it('verify after a placed file was edited by hand: exit 1 naming it and that sync fetches it again, which it does', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    const edited = join(target, '2026-11-01/post/AT/AT_001.zip');
    writeFileSync(edited, 'edited by hand');
    const r = await runCli(['verify', '--target', target]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /dq-refdata: 2026-11-01\/post\/AT\/AT_001\.zip: size-differs \(manifest \d+ bytes, disk 14\); run dq-refdata sync: it downloads this file again and keeps the files that match\n/,
    );
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    expect((await runCli(['verify', '--target', target])).code).toBe(0);
  });

  it('a folder put where a placed file belongs: exit 2 naming the path and to move it away, not a bare EISDIR; the folder untouched, the next sync after that downloads the file', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    const placed = join(target, '2026-11-01/post/DE/DE_001.zip');
    rmSync(placed);
    mkdirSync(placed);
    writeFileSync(join(placed, 'notes.txt'), 'mine');
    const r = await runCli(syncFlags(target), env());
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`dq-refdata: ${placed} is a folder where dq-refdata keeps a file; move the folder away, then sync again`);
    expect(r.stderr).not.toMatch(/EISDIR: illegal operation|\n\s+at /);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 2 });
    expect(readFileSync(join(placed, 'notes.txt'), 'utf8')).toBe('mine');
    renameSync(placed, `${placed}.moved`);
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    expect((await runCli(['verify', '--target', target])).code).toBe(0);
  });

  it('--keep removes only what sync placed in an older version: a file a person put in that version folder is kept, with a warning naming it', async () => {
    const target = freshTarget();
    const own = join(target, '2026-11-01/db-backup.sql');
    mkdirSync(join(target, '2026-11-01'), { recursive: true });
    writeFileSync(own, 'pg_dump of something that matters');
    const first = await runCli(syncFlags(target), env());
    expect(first.code, first.stderr).toBe(0);
    const next = await sandboxWith({ currentVersion: '2026-12-01' });
    try {
      const r = await runCli([...syncFlags(target), '--keep', '1'], { ...env(), DQ_DOWNLOAD_URL: next.url });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'updated', version: '2026-12-01', removedVersions: ['2026-11-01'] });
      expect(readFileSync(own, 'utf8')).toBe('pg_dump of something that matters');
      expect(readdirSync(join(target, '2026-11-01'))).toEqual(['db-backup.sql']);
      expect(r.stderr).toContain(
        `dq-refdata: warning: --keep removed version 2026-11-01 but kept 1 file(s) in ${join(target, '2026-11-01')} that dq-refdata did not place (2026-11-01/db-backup.sql)`,
      );
      expect((await runCli(['verify', '--target', target])).code).toBe(0);
      // A version folder holding only what sync placed goes as before.
      const later = await sandboxWith({ currentVersion: '2027-01-01' });
      try {
        const r2 = await runCli([...syncFlags(target), '--keep', '1'], { ...env(), DQ_DOWNLOAD_URL: later.url });
        expect(JSON.parse(r2.stdout)).toMatchObject({ removedVersions: ['2026-12-01'] });
        expect(readdirSync(target).sort()).toEqual(['2026-11-01', '2027-01-01', 'current', 'manifest.json']);
      } finally {
        await later.close();
      }
    } finally {
      await next.close();
    }
  });

  it('two software packages the server gives one file name: the second is refused naming both and the name (exit 2) on every run, never exit 0 with one of them missing; the first stays whole', async () => {
    const clashing = await sandboxWith({ contentDispositionOverride: 'attachment; filename="bundle.zip"' });
    try {
      const target = freshTarget();
      const args = [...syncFlags(target), '--software', 'software-bundle:linux,software-bundle:linux:user-manuals.zip'];
      for (const run of [1, 2]) {
        const r = await runCli(args, { ...env(), DQ_DOWNLOAD_URL: clashing.url });
        expect(r.code, `run ${run}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(
          'dq-refdata: software-bundle:linux:user-manuals.zip and software-bundle:linux are both named "bundle.zip" by the download server (Content-Disposition), in software/software-bundle/linux/: one would replace the other, so software-bundle:linux:user-manuals.zip was not placed; list only one of them in --software',
        );
        const summary = JSON.parse(r.stdout);
        expect(summary).toMatchObject({ status: 'failed', exitCode: 2 });
        expect(summary.failures).toMatchObject([{ source: '/download/v1/software/software-bundle/latest/linux/user-manuals.zip' }]);
      }
      expect(readdirSync(join(target, 'software/software-bundle/linux'))).toEqual(['bundle.zip']);
      const manifest = JSON.parse(readFileSync(join(target, 'manifest.json'), 'utf8')) as { software: Array<{ path: string; source: string; sha512: string }> };
      expect(manifest.software.map((f) => f.source)).toEqual(['/download/v1/software/software-bundle/latest/linux/software-bundle.zip']);
      expect(sha512(join(target, 'software/software-bundle/linux/bundle.zip'))).toBe(manifest.software[0]?.sha512);
      // Listing one of them is what the message asks for: that syncs.
      const fixed = await runCli([...syncFlags(target), '--software', 'software-bundle:linux'], { ...env(), DQ_DOWNLOAD_URL: clashing.url });
      expect(fixed.code, fixed.stderr).toBe(0);
      expect((await runCli(['verify', '--target', target])).code).toBe(0);
    } finally {
      await clashing.close();
    }
  });
});

describe('dq-refdata stopped by a signal', () => {
  it('SIGTERM while --lock-wait waits for another sync: exit 75 at once saying it was interrupted, nothing downloaded', async () => {
    const target = freshTarget();
    mkdirSync(target, { recursive: true });
    // A live owner: this test process.
    writeFileSync(join(target, LOCK_FILE), JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString() }));
    const requests = downloadRequests(sandbox);
    const run = startCli([...syncFlags(target), '--lock-wait', '60']);
    await sleep(2000); // started and waiting for the lock
    run.kill('SIGTERM');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(75);
    expect(r.msAfterSignal).toBeLessThan(5000);
    expect(r.stderr).toContain('sync interrupted (received SIGTERM) while waiting for the lock of another sync');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 75, code: 'interrupted' });
    expect(downloadRequests(sandbox) - requests).toBe(0);
  }, 90_000);

  it('SIGINT while verify hashes a large file: exit 75 at once saying verify was interrupted, not the whole file hashed first', async () => {
    const { target, huge } = await targetWithHugeFile();
    const run = startCli(['verify', '--target', target]);
    await untilOpens(run.child.pid ?? 0, huge);
    run.kill('SIGINT');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(75);
    expect(r.msAfterSignal).toBeLessThan(5000);
    expect(r.stderr).toContain(`verify interrupted (received SIGINT) while hashing ${huge}; nothing was changed: run dq-refdata verify again`);
  }, 120_000);

  it('SIGTERM while sync hashes a placed file: exit 75 at once saying the sync was interrupted', async () => {
    const { target, huge } = await targetWithHugeFile();
    const run = startCli(syncFlags(target));
    await untilOpens(run.child.pid ?? 0, huge);
    run.kill('SIGTERM');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(75);
    expect(r.msAfterSignal).toBeLessThan(5000);
    expect(r.stderr).toContain(`sync interrupted (received SIGTERM) while hashing ${huge}; run dq-refdata sync again`);
  }, 120_000);
});
