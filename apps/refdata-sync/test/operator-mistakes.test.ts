import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, downloadRequests, freshTarget, removeTargets, runCli, sandboxWith } from './helpers.js';

// What an operator gets wrong (another release into a target in use).

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
});
