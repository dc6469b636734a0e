import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `dq-store` (README "The result store") given the wrong `--store` by an operator: it says what is
// wrong in one line, with the exit code for it, and touches nothing that is not the store's.

const BIN = fileURLToPath(new URL('../bin/dq-store.js', import.meta.url));
let dir: string;

const dqStore = (args: string[]) => node([BIN, ...args]);

function node(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: fileURLToPath(new URL('..', import.meta.url)), env: { ...process.env, DQ_STORE: '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-store-operator-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('dq-store given the wrong --store', () => {
  it('an empty --store (a variable that was not set) exits 2 naming it, not 0 with "no result store"', async () => {
    const cases = ['', ' '].flatMap((store) => [['info'], ['prune', '--older-than', '30d'], ['clear', '--json']].map((args) => [...args, '--store', store]));
    for (const [args, r] of await Promise.all(cases.map(async (args) => [args, await dqStore(args)] as const))) {
      expect(r.code, `${args.join(' ')}: ${r.stdout}`).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`dq-store: --store is empty: give the store's folder or a postgres:// URL; see dq-store --help\n`);
    }
  });

  it("an unknown flag is named in one line with the nearest known one, as by the connectors (it printed parseArgs's text and the whole usage)", async () => {
    const r = await dqStore(['prune', '--older-then', '30d', '--store', dir]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("dq-store: unknown flag '--older-then'; did you mean --older-than?; see dq-store --help\n");
  });

  it('a --store below a file says that a part of its path is a file, and never advises --store off (which dq-store refuses)', async () => {
    const file = join(dir, 'export.csv');
    await writeFile(file, 'a,b\n');
    for (const args of [['info'], ['clear']]) {
      const r = await dqStore([...args, '--store', join(file, 'store')]);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `dq-store: the result store ${join(file, 'store')} is not a folder (a part of its path is a file): give --store the store's folder\n`,
      );
    }
    // A store-io error of the embedded store (a results.mdb that is a folder) names no --store off either.
    const odd = join(dir, 'odd');
    await rm(odd, { recursive: true, force: true });
    await mkdir(join(odd, 'results.mdb'), { recursive: true });
    const init = await dqStore(['init', '--store', odd]);
    expect(init.code).toBe(2);
    expect(init.stderr).toContain('cannot be used (EISDIR)');
    expect(init.stderr).not.toContain('--store off');
  });

  it("another program's LMDB under the store's file name: info counts none of its records, prune and clear remove none", async () => {
    const other = join(dir, 'other-app');
    // Written by a program of its own (another process), with lmdb-js's defaults.
    const wrote = await node([
      '--input-type=module',
      '-e',
      `import { open } from 'lmdb';
       const db = open({ path: ${JSON.stringify(join(other, 'results.mdb'))} });
       for (let i = 0; i < 5; i += 1) await db.put('user-' + i, { name: 'n' + i, email: 'e' + i + '@example.com' });
       await db.put('dated', { t: 'yesterday', r: 'kept' });
       await db.close();`,
    ]);
    expect(wrote.code, wrote.stderr).toBe(0);
    const info = await dqStore(['info', '--store', other, '--json']);
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ entries: 0 });
    for (const args of [['prune', '--older-than', '0'], ['clear']]) {
      const r = await dqStore([...args, '--store', other, '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ removed: 0 });
    }
    const kept = await node([
      '--input-type=module',
      '-e',
      `import { open } from 'lmdb';
       const db = open({ path: ${JSON.stringify(join(other, 'results.mdb'))} });
       process.stdout.write(String([...db.getKeys()].length));
       await db.close();`,
    ]);
    expect(kept.stdout.trim()).toBe('6');
    expect((await readdir(other)).sort()).toEqual(['results.mdb', 'results.mdb-lock']);
  });
});
