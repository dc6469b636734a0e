import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, downloadRequests, freshTarget, removeTargets, runCli, sandboxWith } from './helpers.js';

// What an operator gets wrong (another release into a target in use, a folder where `current` is
// kept).

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await sandboxWith();
});
afterAll(() => sandbox.close());
afterAll(removeTargets);

const env = () => ({ DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: sandbox.url });
const syncArgs = (target: string, release = 'release-v3') => [
  'sync',
  '--target',
  target,
  '--products',
  'post',
  '--countries',
  'DE,AT',
  '--release',
  release,
  '--platform',
  'linux_x64',
];
const sha512 = (path: string) => createHash('sha512').update(readFileSync(path)).digest('hex');

describe('dq-refdata and operator mistakes', () => {
  it('a sync with another --release into a target whose current version holds release-v3: exit 2 naming both, the files current points to untouched', async () => {
    const target = freshTarget();
    expect((await runCli(syncArgs(target), env())).code).toBe(0);
    const files = ['2026-11-01/post/DE/DE_001.zip', '2026-11-01/post/AT/AT_001.zip'];
    const before = files.map((f) => sha512(join(target, f)));
    const manifestBefore = readFileSync(join(target, 'manifest.json'), 'utf8');
    const requests = downloadRequests(sandbox);

    const r = await runCli(syncArgs(target, 'release-v2'), env());
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
    const r = await runCli(syncArgs(target), env());
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `dq-refdata: ${join(target, 'current')} is a directory, not the symbolic link dq-refdata keeps there to point at the version in use; move it away, then sync again (the files placed are kept)`,
    );
    expect(r.stderr).not.toMatch(/EISDIR|\n\s+at /);
    expect(readFileSync(join(target, 'current', 'notes.txt'), 'utf8')).toBe('mine');

    mkdirSync(join(target, '..', 'moved'));
    renameSync(join(target, 'current'), join(target, '..', 'moved', 'current'));
    const again = await runCli(syncArgs(target), env());
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'updated', downloaded: [], alreadyVerified: 2 });
    expect(readlinkSync(join(target, 'current'))).toBe('2026-11-01');
  });
});
