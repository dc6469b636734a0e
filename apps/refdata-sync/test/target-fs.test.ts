import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, readdirSync, statfsSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, downloadRequests, freshTarget, removeTargets, runCli, sandboxWith, syncFlags } from './helpers.js';

// A target on a file system that fills up or turns read-only, and a target that is a file: each
// run says which file it could not write and what to do, never only "ENOSPC: ..., write".

const run = (args: string[]) => runCli(args, { DQ_API_KEY: DEFAULT_API_KEY });

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await sandboxWith();
});
afterAll(() => sandbox.close());
afterAll(removeTargets);

const flags = (target: string) => [...syncFlags(target), '--download-url', sandbox.url];

/** Mounting a small tmpfs needs root; elsewhere the file-system tests are skipped. */
const root = process.getuid?.() === 0;

describe('dq-refdata sync and the target file system', () => {
  it.runIf(root)('a full file system: exit 1 naming the file and saying to free space; the next sync after that completes the version', async () => {
    const mnt = dirname(freshTarget());
    mkdirSync(mnt, { recursive: true });
    // Room for the installer, the manifest and one ~40 KB artifact, not for the second.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]);
    try {
      const target = join(mnt, 'target');
      const full = await run(flags(target));
      expect(full.code, full.stderr).toBe(1);
      // Refused before a byte of it was written: the file system is not left full for the machine's other programs.
      expect(full.stderr).toMatch(
        new RegExp(
          `cannot write ${target}/2026-11-01/post/(DE|AT)/(DE|AT)_001\\.zip: it needs \\d+\\.\\d KiB and its file system has \\d+(\\.\\d KiB| bytes) free, so nothing of it was written; free space`,
        ),
      );
      const { bavail, bsize } = statfsSync(mnt);
      expect(bavail * bsize).toBeGreaterThan(8 * 1024);
      expect(readdirSync(join(target, '2026-11-01', 'post'), { recursive: true }).filter((f) => String(f).includes('.dq-download-'))).toEqual([]);
      expect(full.stderr).not.toMatch(/\n\s+at /);
      expect(JSON.parse(full.stdout)).toMatchObject({ status: 'failed', exitCode: 1, code: 'target-full' });
      expect(readdirSync(target).filter((f) => f.endsWith('.tmp'))).toEqual([]);

      execFileSync('mount', ['-o', 'remount,size=2m', mnt]);
      const again = await run(flags(target));
      expect(again.code, again.stderr).toBe(0);
      expect(existsSync(join(target, 'current', 'post', 'AT', 'AT_001.zip'))).toBe(true);
      expect((await run(['verify', '--target', target])).code).toBe(0);

      execFileSync('mount', ['-o', 'remount,ro', mnt]);
      const ro = await run(flags(target));
      expect(ro.code, ro.stderr).toBe(2);
      expect(ro.stderr).toContain(`cannot write ${target}/.dq-refdata.lock: the file system is read-only (EROFS)`);
      expect(ro.stderr).not.toMatch(/\n\s+at /);
      expect(JSON.parse(ro.stdout)).toMatchObject({ status: 'failed', exitCode: 2, code: 'target-not-writable' });
      expect((await run(['verify', '--target', target])).code).toBe(0); // reading still works
    } finally {
      execFileSync('umount', [mnt]);
    }
  });

  it('a --target that is a file, or lies under one: exit 2 saying so, nothing requested', async () => {
    const file = join(dirname(freshTarget()), 'a-file');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, 'not a directory\n');
    const requests = downloadRequests(sandbox);
    for (const target of [file, join(file, 'sub')]) {
      const r = await run(flags(target));
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--target ${target} cannot be a directory:`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 2, code: 'usage' });
    }
    expect(downloadRequests(sandbox)).toBe(requests);
  });

  it('a --target that is a symbolic link to a folder that is not there (a share not mounted): exit 2 naming the link and where it points, nothing requested', async () => {
    const dir = dirname(freshTarget());
    mkdirSync(dir, { recursive: true });
    const target = join(dir, 'refdata');
    const nas = join(dir, 'nas', 'refdata');
    symlinkSync(nas, target);
    const requests = downloadRequests(sandbox);
    for (const t of [target, join(target, 'sub')]) {
      const r = await run(flags(t));
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        `dq-refdata: --target ${t}: ${target} is a symbolic link to ${nas}, which does not exist (a file system not mounted?); mount or create it, or give another --target`,
      );
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 2, code: 'usage' });
    }
    expect(existsSync(nas)).toBe(false);
    expect(downloadRequests(sandbox)).toBe(requests);
  });

  it.runIf(root)('a --target to be created on a read-only file system: exit 2 naming the folder that cannot be made, not a bare ENOENT', async () => {
    const mnt = dirname(freshTarget());
    mkdirSync(mnt, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,ro', 'tmpfs', mnt]);
    try {
      const r = await run(flags(join(mnt, 'refdata', 'target')));
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        `cannot write ${join(mnt, 'refdata')}: the file system is read-only (EROFS); make the target writable for this user, or give another --target`,
      );
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', exitCode: 2, code: 'target-not-writable' });
    } finally {
      execFileSync('umount', [mnt]);
    }
  });

  it('a download host that redirects (http to https, a moved host): exit 1 naming where it points and that redirects are not followed', async () => {
    const server = createServer((req, res) => {
      res.writeHead(301, { location: `https://moved.example.com${req.url ?? '/'}`, 'content-length': '0' });
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await run(flags(freshTarget()).map((f) => (f === sandbox.url ? url : f)));
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(
        'GET /download/v1/data/post/version.txt: the server redirects (HTTP 301) to https://moved.example.com/download/v1/data/post/version.txt; redirects are not followed (the API key would go along): use that host as the download URL',
      );
    } finally {
      server.close();
    }
  });
});
