import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, mkdtemp, open, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '@dq/core/store';

const BIN = fileURLToPath(new URL('../bin/dq-store.js', import.meta.url));
let dir: string;

/** Runs dq-store with `args`; `fileSizeLimit` (bytes) runs it under `prlimit --fsize`, as on a full disk. */
function dqStore(args: string[], fileSizeLimit?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const command = [process.execPath, BIN, ...args];
    if (fileSizeLimit !== undefined) command.unshift('prlimit', `--fsize=${fileSizeLimit}`);
    const child = spawn(command[0]!, command.slice(1), { env: { ...process.env, DQ_STORE: '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-store-cli-'));
  const store = (await openStore(join(dir, 'store')))!;
  const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
  await Promise.all([
    store.set('k-old', { status: 'accepted', resultClass: 'A', requestId: 'r1', checkedAt: old }),
    store.set('k-new-1', { status: 'accepted', resultClass: 'A', requestId: 'r2', checkedAt: new Date().toISOString() }),
    store.set('k-new-2', { status: 'invalid', resultClass: 'F', requestId: 'r3', checkedAt: new Date().toISOString() }),
  ]);
  await store.close();
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('dq-store', () => {
  it('shows entries and age, prunes what is older than an age, and clears', async () => {
    const store = join(dir, 'store');
    const info = await dqStore(['info', '--store', store, '--json']);
    expect(info.code, info.stderr).toBe(0);
    const shown = JSON.parse(info.stdout) as { entries: number; oldest: string; newest: string; bytes: number };
    expect(shown.entries).toBe(3);
    expect(Date.now() - Date.parse(shown.oldest)).toBeGreaterThan(39 * 86_400_000);
    expect(Date.now() - Date.parse(shown.newest)).toBeLessThan(86_400_000);

    // "30" meant as days would remove every entry older than 30 seconds: a number needs its unit.
    const bare = await dqStore(['prune', '--older-than', '30', '--store', store]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('--older-than: "30" has no unit: write 30d for days, or 30h, 30m or 30s');
    expect(JSON.parse((await dqStore(['info', '--store', store, '--json'])).stdout)).toMatchObject({ entries: 3 });

    const pruned = await dqStore(['prune', '--older-than', '30d', '--store', store]);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain('removed 1 entry');
    const cleared = await dqStore(['clear', '--store', store, '--json']);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ command: 'clear', removed: 2 });
    expect(JSON.parse((await dqStore(['info', '--store', store, '--json'])).stdout)).toMatchObject({ entries: 0 });
  });

  it('a folder without a store is reported as such, and info, prune and clear create nothing there', async () => {
    const mistyped = join(dir, 'stroe');
    for (const args of [['info'], ['prune', '--older-than', '30d'], ['clear']]) {
      const r = await dqStore([...args, '--store', mistyped]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`no result store in ${mistyped}`);
    }
    expect(JSON.parse((await dqStore(['info', '--store', mistyped, '--json'])).stdout)).toEqual({ location: mistyped, exists: false, bytes: 0, entries: 0 });
    // An existing folder that holds no store (here the temporary folder itself) gets no database file either.
    expect((await dqStore(['info', '--store', dir])).stdout).toContain('no result store in');
    expect(existsSync(mistyped)).toBe(false);
    expect(existsSync(join(dir, 'results.mdb'))).toBe(false);
    const init = await dqStore(['init', '--store', mistyped]);
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse((await dqStore(['info', '--store', mistyped, '--json'])).stdout)).toMatchObject({ entries: 0, location: mistyped });
  });

  it('exits 2 naming the problem for bad usage, and never prints a database password', async () => {
    const noAge = await dqStore(['prune', '--store', join(dir, 'store')]);
    expect(noAge.code).toBe(2);
    expect(noAge.stderr).toContain('--older-than');
    const badAge = await dqStore(['prune', '--older-than', 'soon', '--store', join(dir, 'store')]);
    expect(badAge.code).toBe(2);
    expect(badAge.stderr).toContain('"soon" is not an age');
    // Nothing listens on port 1: the store cannot be opened, and the message does not hold the password.
    const unreachable = await dqStore(['info', '--store', 'postgres://etl:s3cret-pw@127.0.0.1:1/crm']);
    expect([2, 75]).toContain(unreachable.code);
    expect(unreachable.stderr).toContain('cannot be used');
    expect(unreachable.stderr).not.toContain('s3cret-pw');
    expect(unreachable.stderr).not.toMatch(/\n\s+at /);
    // A password given as a query parameter (libpq reads ?password= too) is not shown either.
    const inQuery = await dqStore(['info', '--store', 'postgres://etl@127.0.0.1:1/crm?sslmode=disable&password=s3cret-pw']);
    expect([2, 75]).toContain(inQuery.code);
    expect(inQuery.stderr).toContain('cannot be used');
    expect(inQuery.stderr).not.toContain('s3cret-pw');
  });

  it('a store file damaged on disk (overwritten, zeroed, cut short) stops info and prune with one line naming it; clear starts it afresh', async () => {
    // A store of some size: its tree has pages past the first ones, as a store in use has.
    const intact = join(dir, 'intact');
    const store = (await openStore(intact))!;
    const checkedAt = new Date().toISOString();
    await Promise.all(
      Array.from({ length: 3000 }, async (_, i) => store.set(`k-${i}`, { status: 'accepted', resultClass: 'A', requestId: `r-${i}`, checkedAt })),
    );
    await store.close();
    const file = (folder: string) => join(folder, 'results.mdb');
    const overwrite = async (folder: string, at: number, bytes: Buffer) => {
      const handle = await open(file(folder), 'r+');
      await handle.write(bytes, 0, bytes.length, at);
      await handle.close();
    };
    const damages: Array<[string, (folder: string) => Promise<void>]> = [
      ['overwritten with other bytes', (f) => overwrite(f, 0, Buffer.alloc(16_384, 0x5a))],
      ['zeroed at its start', (f) => overwrite(f, 0, Buffer.alloc(8192))],
      ['cut short', (f) => truncate(file(f), 64 * 1024)],
    ];
    for (const [how, damage] of damages) {
      const folder = join(dir, `damaged-${how.split(' ')[0]}`);
      await cp(intact, folder, { recursive: true });
      await damage(folder);
      for (const args of [['info'], ['prune', '--older-than', '30d']]) {
        const r = await dqStore([...args, '--store', folder]);
        expect({ how, args, code: r.code, signal: r.signal }).toEqual({ how, args, code: 2, signal: null });
        expect(r.stderr).toMatch(new RegExp(`^dq-store: the result store ${folder} is damaged \\(.+\\); .*dq-store clear --store ${folder}.*\\n$`));
      }
      const cleared = await dqStore(['clear', '--store', folder]);
      expect({ how, code: cleared.code, signal: cleared.signal }, cleared.stderr).toEqual({ how, code: 0, signal: null });
      expect(cleared.stdout).toMatch(/damaged .*removed/);
      const info = await dqStore(['info', '--store', folder, '--json']);
      expect(info.code, info.stderr).toBe(0);
      expect(JSON.parse(info.stdout)).toMatchObject({ entries: 0, location: folder });
    }
    // The intact store is not taken for a damaged one.
    expect(JSON.parse((await dqStore(['info', '--store', intact, '--json'])).stdout)).toMatchObject({ entries: 3000 });
  });

  it('leaves alone a results.mdb of another program (no LMDB header, no lock file beside it): info, prune and clear exit 2, create nothing and delete nothing', async () => {
    const foreign = join(dir, 'access-db');
    await mkdir(foreign);
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 251));
    await writeFile(join(foreign, 'results.mdb'), bytes);
    for (const args of [['info'], ['prune', '--older-than', '30d'], ['clear']]) {
      const r = await dqStore([...args, '--store', foreign]);
      expect({ args, code: r.code }, r.stderr + r.stdout).toEqual({ args, code: 2 });
      expect(r.stderr).toContain(`${join(foreign, 'results.mdb')} is not a result store's file`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await readdir(foreign)).toEqual(['results.mdb']);
    expect((await readFile(join(foreign, 'results.mdb'))).equals(bytes)).toBe(true);
  });

  it('a --store that is a file, or a mistyped postgres URL, exits 2 without creating anything or printing the password', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'not a store');
    for (const args of [['info'], ['clear']]) {
      const r = await dqStore([...args, '--store', file]);
      expect(r.code, r.stderr + r.stdout).toBe(2);
      expect(r.stderr).toContain(`the result store ${file} is not a folder`);
    }
    const cwd = await mkdtemp(join(tmpdir(), 'dq-store-cwd-'));
    try {
      for (const spec of ['postgres:/etl:S3cretPW@db.internal/crm', 'POSTGRES:etl:S3cretPW@db/crm', 'postgresql:etl@db/crm']) {
        const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
          const child = spawn(process.execPath, [BIN, 'clear', '--store', spec], { cwd, env: { ...process.env, DQ_STORE: '' } });
          let out = '';
          child.stdout.on('data', (d: Buffer) => (out += d.toString()));
          child.stderr.on('data', (d: Buffer) => (out += d.toString()));
          child.on('close', (code) => resolve({ code, out }));
        });
        expect(r.code, r.out).toBe(2);
        expect(r.out).toContain('is not a postgres:// URL');
        expect(r.out).not.toContain('S3cretPW');
      }
      expect(await readdir(cwd)).toEqual([]);
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  });

  it.runIf(process.getuid?.() === 0)('a store this user may not read exits 2 naming the permission, not "nothing is stored there"', async () => {
    const store = join(dir, 'private');
    const opened = (await openStore(store))!;
    await opened.set('k', { status: 'accepted', resultClass: 'A', requestId: 'r', checkedAt: new Date().toISOString() });
    await opened.close();
    // Another user's store, private to it; dq-store runs as root without the capabilities that
    // override file permissions (its own files stay reachable where the clone is private, as /root).
    await chmod(store, 0o700);
    await chown(store, 65534, 65534);
    for (const args of [['info'], ['clear']]) {
      const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn('setpriv', ['--bounding-set=-dac_override,-dac_read_search', process.execPath, BIN, ...args, '--store', store], {
          env: { ...process.env, DQ_STORE: '' },
        });
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (out += d.toString()));
        child.on('close', (code) => resolve({ code, out }));
      });
      expect(r.code, r.out).toBe(2);
      expect(r.out).toMatch(/cannot be used \(EACCES\)/);
      expect(r.out).not.toContain('nothing is stored there');
    }
    await chown(store, 0, 0);
    expect(JSON.parse((await dqStore(['info', '--store', store, '--json'])).stdout)).toMatchObject({ entries: 1 });
  });

  it('clear while a run has the store open: the answers that run stores afterwards stay readable for every process', async () => {
    const folder = join(dir, 'shared');
    const run = (await openStore(folder))!;
    const answer = (requestId: string) => ({ status: 'accepted' as const, resultClass: 'A' as const, requestId, checkedAt: new Date().toISOString() });
    await run.set('k-before', answer('r-before'));
    const cleared = await dqStore(['clear', '--store', folder]);
    expect(cleared.stdout, cleared.stderr).toContain('removed 1 entry');
    // The same shape of answer as before the clear, from the process that had it open.
    await run.set('k-after', answer('r-after'));
    await run.close();

    const later = (await openStore(folder))!;
    try {
      expect(later.get('k-after')).toMatchObject({ requestId: 'r-after' });
      expect(later.get('k-before')).toBeUndefined();
    } finally {
      await later.close();
    }
    const info = await dqStore(['info', '--store', folder, '--json']);
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ entries: 1 });
    const pruned = await dqStore(['prune', '--older-than', '30d', '--store', folder]);
    expect(pruned.code, pruned.stderr).toBe(0);
  });

  it("a reader of stdout that went away (| head) gets no stack trace, and the exit code stays the command's", async () => {
    const child = spawn(process.execPath, [BIN, 'info', '--store', join(dir, 'store')], { env: { ...process.env, DQ_STORE: '' } });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(0);
    expect(stderr).toBe('');
  });
});

describe('dq-store on a full disk', () => {
  it('prune and clear say the disk is full in one line, exit 2 and leave every entry as it was', async () => {
    // Written as runs write (small commits), so the file has no spare room left.
    const path = join(dir, 'full');
    const store = (await openStore(path))!;
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    for (let i = 0; i < 6000; i += 15) {
      const commit: Promise<void>[] = [];
      for (let j = i; j < i + 15; j++) {
        commit.push(
          Promise.resolve(
            store.set(`key-${j}`, { status: 'accepted', resultClass: 'A', requestId: `r${j}`, checkedAt: j % 2 ? old : new Date().toISOString() }),
          ),
        );
      }
      await Promise.all(commit);
    }
    await store.close();
    const { size } = await stat(join(path, 'results.mdb'));
    // A file-size limit at the file's size: it cannot grow, the way a full disk stops it (EFBIG).
    for (const command of [['prune', '--older-than', '30d'], ['clear']]) {
      const run = await dqStore([...command, '--store', path], size);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toBe(
        `dq-store: the result store ${path} cannot be used: its file reached the file-size limit (EFBIG: ulimit -f, or the largest file of its file system); raise the limit or give --store a folder on another file system, then rerun\n`,
      );
    }
    const info = await dqStore(['info', '--store', path, '--json']);
    expect(JSON.parse(info.stdout)).toMatchObject({ entries: 6000 });
  }, 60_000);
});
