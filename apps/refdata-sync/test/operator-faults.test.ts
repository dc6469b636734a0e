import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { acquireFileLock } from '@dq/core/lock';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, freshTarget, removeTargets, runCli, sandboxWith, syncFlags } from './helpers.js';

// An operator's conflicting flags and a `current` replaced by hand, as the CLI reports them.

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await sandboxWith();
});
afterAll(() => sandbox.close());
afterAll(removeTargets);

const env = () => ({ DQ_API_KEY: DEFAULT_API_KEY, DQ_DOWNLOAD_URL: sandbox.url });

describe('dq-refdata: operator faults', () => {
  it('phone-describe with both --cache and --target is bad usage naming both, nothing written: one of them would be ignored', async () => {
    const a = freshTarget();
    const cache = join(dirname(a), 'describe.json');
    const p = await runCli(['phone-describe', '--realtime-url', sandbox.url, '--cache', cache, '--target', a], env());
    expect(p.code).toBe(2);
    expect(p.stderr).toContain('phone-describe takes --cache FILE or --target DIR, not both');
    expect(existsSync(cache) || existsSync(a)).toBe(false);
  });

  it('verify after current was replaced by a folder by hand: exit 1 naming the folder and saying to move it away, not "points to nothing"', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    renameSync(join(target, 'current'), join(target, 'current.link'));
    mkdirSync(join(target, 'current'));
    writeFileSync(join(target, 'current', 'notes.txt'), 'kept\n');
    const v = await runCli(['verify', '--target', target], env());
    expect(v.code).toBe(1);
    expect(v.stderr).toContain(`${join(target, 'current')} is a folder, not the symbolic link dq-refdata keeps there`);
    expect(v.stderr).toContain('move it away, then run dq-refdata sync');
    expect(v.stderr).not.toContain('points to nothing');
    expect(readFileSync(join(target, 'current', 'notes.txt'), 'utf8')).toBe('kept\n');
  });

  it('verify while a sync holds the target (placing, pruning or switching files): what it finds is said to be that work in progress, exit 75; without one, exit 1', async () => {
    const target = freshTarget();
    expect((await runCli(syncFlags(target), env())).code).toBe(0);
    const m = JSON.parse(readFileSync(join(target, 'manifest.json'), 'utf8')) as { versions: Record<string, { files: Array<{ path: string }> }> };
    const file = Object.values(m.versions)[0]!.files[0]!.path;
    // As a sync pruning an old version leaves it for an instant: the file gone, the manifest not yet written.
    renameSync(join(target, file), join(target, `${file}.aside`));
    const held = await acquireFileLock(join(target, '.dq-refdata.lock'));
    let during;
    try {
      during = await runCli(['verify', '--target', target], env());
    } finally {
      await held.release();
    }
    expect(during.code, during.stderr).toBe(75);
    expect(during.stderr).toContain(`a sync of this target (pid ${process.pid}) was running while verify read it`);
    expect(JSON.parse(during.stdout)).toMatchObject({ ok: false, syncRunning: process.pid });
    const after = await runCli(['verify', '--target', target], env());
    expect(after.code).toBe(1);
    expect(after.stderr).toContain(`${file}: missing`);
  });

  it("a hand-edited manifest naming a data file as a software package's earlier file: sync keeps the data file (warning), verify passes", async () => {
    const target = freshTarget();
    const flags = [...syncFlags(target), '--software', 'software-bundle:linux'];
    expect((await runCli(flags, env())).code).toBe(0);
    const data = '2026-11-01/post/DE/DE_001.zip';
    const before = readFileSync(join(target, data));
    const m = JSON.parse(readFileSync(join(target, 'manifest.json'), 'utf8')) as {
      versions: Record<string, { files: Array<{ path: string }> }>;
      software: Array<{ path: string; sha512: string }>;
    };
    m.software[0]!.path = data;
    m.software[0]!.sha512 = '0'.repeat(128);
    m.versions['2026-11-01']!.files = m.versions['2026-11-01']!.files.filter((f) => f.path !== data);
    writeFileSync(join(target, 'manifest.json'), JSON.stringify(m));
    const r = await runCli(flags, env());
    expect(r.code).toBe(0);
    expect(existsSync(join(target, data)), 'the data file was deleted').toBe(true);
    expect(readFileSync(join(target, data)).equals(before)).toBe(true);
    expect(r.stderr).toContain(`the manifest named ${data} as an earlier file of a software package, but it is not under software/: it was not removed`);
    expect((await runCli(['verify', '--target', target], env())).code).toBe(0);
  });
});
