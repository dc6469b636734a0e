import { spawnSync } from 'node:child_process';
import { chmod, chown, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type ResultStore } from '@dq/core/store';
import { runCommand, type CommandExit } from '@dq/test-support/cli';

// dq-store by a user who may only read the embedded store (README "The result store"): a data
// steward checking its size and age, a store folder of a service account that its group may read,
// a read-only mount. `info` shows the figures and changes nothing; `prune` and `clear` stop with
// exit 2 saying they need write access. Run as another user: the tests run as root, who may write
// anywhere.

const BIN = fileURLToPath(new URL('../bin/dq-store.js', import.meta.url));
const isRoot = process.getuid?.() === 0;
/** The store's owner: another user (the service account of the runs). */
const OWNER = 1;
const DAY = 86_400_000;
/** Whether a child may mount in a mount namespace of its own (root with CAP_SYS_ADMIN). */
const canMount = isRoot && spawnSync('unshare', ['-m', 'mount', '--bind', tmpdir(), tmpdir()]).status === 0;

let base: string;
/**
 * How dq-store runs as the reader: as user nobody, in a group that may read the store, or, where
 * nobody cannot reach the repository (a clone in a private folder such as /root), as root without
 * the capabilities that override file permissions (in group 0, which the store is given then).
 */
let reader: { prefix: string[]; uid: number; gid: number };

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'dq-store-ro-'));
  await chmod(base, 0o755);
  const nobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
  reader =
    isRoot && spawnSync(nobody[0]!, [...nobody.slice(1), process.execPath, BIN, '--help'], { stdio: 'ignore' }).status === 0
      ? { prefix: nobody, uid: 65534, gid: 65534 }
      : { prefix: ['setpriv', '--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search'], uid: 0, gid: 0 };
});
afterAll(async () => rm(base, { recursive: true, force: true }));

type Ran = CommandExit;

/** Runs dq-store with `args` after `prefix` (default: as the reader). */
function dqStore(args: string[], prefix: string[] = reader.prefix): Promise<Ran> {
  return runCommand([...prefix, process.execPath, BIN, ...args], { cwd: base, env: { DQ_STORE: '' } });
}

const answer = (requestId: string, checkedAt: string) => ({ status: 'accepted' as const, resultClass: 'A' as const, requestId, checkedAt });

/**
 * A store of `count` entries (`k-old`, checked 40 days ago, and `k-1` … checked now) in a new
 * folder, made by the owner and given the reader's group to read: folder 0750, files 0640.
 */
async function groupReadableStore(name: string, count = 3): Promise<{ dir: string; old: string; newest: string }> {
  const dir = join(base, name);
  const store = (await openStore(dir))!;
  const old = new Date(Date.now() - 40 * DAY).toISOString();
  const newest = new Date().toISOString();
  await store.set('k-old', answer('r-old', old));
  for (let i = 1; i < count; i += 2000) {
    await Promise.all(Array.from({ length: Math.min(2000, count - i) }, async (_, j) => store.set(`k-${i + j}`, answer(`r-${i + j}`, newest))));
  }
  await store.close();
  await giveToOwner(dir);
  return { dir, old, newest };
}

/** The store's folder and files to {@link OWNER}, readable by the reader's group (0750, 0640). */
async function giveToOwner(dir: string): Promise<void> {
  await chown(dir, OWNER, reader.gid);
  await chmod(dir, 0o750);
  for (const file of await readdir(dir)) {
    await chown(join(dir, file), OWNER, reader.gid);
    await chmod(join(dir, file), 0o640);
  }
}

/** Every file of `dir` with its bytes, mode, owner and modification time: what "changes nothing" compares. */
async function contents(dir: string): Promise<Record<string, { bytes: string; mode: number; uid: number; gid: number; mtimeMs: number }>> {
  const out: Record<string, { bytes: string; mode: number; uid: number; gid: number; mtimeMs: number }> = {};
  for (const file of (await readdir(dir)).sort()) {
    const s = await stat(join(dir, file));
    out[file] = { bytes: (await readFile(join(dir, file))).toString('base64'), mode: s.mode, uid: s.uid, gid: s.gid, mtimeMs: s.mtimeMs };
  }
  const s = await stat(dir);
  out['.'] = { bytes: '', mode: s.mode, uid: s.uid, gid: s.gid, mtimeMs: s.mtimeMs };
  return out;
}

interface Info {
  location: string;
  bytes: number;
  entries: number;
  oldest?: string;
  newest?: string;
}

describe.runIf(isRoot)('dq-store by a user who may only read the store', () => {
  it('info shows the entries, size and age, exits 0, and creates or changes nothing', async () => {
    const { dir, old, newest } = await groupReadableStore('steward');
    const before = await contents(dir);
    const around = await readdir(base);

    const json = await dqStore(['info', '--store', dir, '--json']);
    expect([json.code, json.signal, json.stderr]).toEqual([0, null, '']);
    const bytes = (await stat(join(dir, 'results.mdb'))).size;
    expect(JSON.parse(json.stdout) as Info).toEqual({ location: dir, bytes, entries: 3, oldest: old, newest });

    const text = await dqStore(['info', '--store', dir]);
    expect([text.code, text.stderr]).toEqual([0, '']);
    expect(text.stdout).toBe(`store    ${dir}\nsize     ${(bytes / 1024 / 1024).toFixed(1)} MiB\nentries  3\noldest   ${old}\nnewest   ${newest}\n`);

    // Byte for byte, with the lock file, the modes, owners and times; no file and no folder made.
    expect(await contents(dir)).toEqual(before);
    expect(await readdir(base)).toEqual(around);
  });

  it('prune and clear exit 2 in one line naming the file, the access they need and whom to ask, and change nothing', async () => {
    const { dir } = await groupReadableStore('steward-trims');
    const before = await contents(dir);
    const who = reader.uid === 0 ? 'user id 0' : `user id ${reader.uid}`;
    for (const [command, args] of [
      ['prune', ['--older-than', '30d']],
      ['clear', []],
    ] as const) {
      for (const json of [false, true]) {
        const r = await dqStore([command, ...args, '--store', dir, ...(json ? ['--json'] : [])]);
        expect({ command, json, code: r.code, signal: r.signal, stdout: r.stdout }).toEqual({ command, json, code: 2, signal: null, stdout: '' });
        expect(r.stderr).toBe(
          `dq-store: the result store ${dir} cannot be used (EACCES): ${who} may not write ${join(dir, 'results.mdb')} (owned by user id ${OWNER}, mode 0640); ` +
            `dq-store ${command} needs write access to the store's folder and its files: run it as their owner, or have the owner give this user write access (dq-store info needs read access only)\n`,
        );
      }
    }
    expect(await contents(dir)).toEqual(before);
    // The owner's view: every entry still there.
    const info = await dqStore(['info', '--store', dir, '--json'], []);
    expect(JSON.parse(info.stdout) as Info).toMatchObject({ entries: 3 });
  });

  it('a store whose data file the user may not read: info exits 2 naming the file and the read access it needs', async () => {
    const { dir } = await groupReadableStore('private-file');
    await chmod(join(dir, 'results.mdb'), 0o600);
    const before = await contents(dir);
    const r = await dqStore(['info', '--store', dir]);
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toMatch(
      new RegExp(
        `^dq-store: the result store ${dir} cannot be used \\(EACCES\\): user id ${reader.uid} may not read ${join(dir, 'results.mdb')} \\(owned by user id ${OWNER}, mode 0600\\); dq-store info needs read access to the store's folder and its results.mdb: .*\\n$`,
      ),
    );
    expect(await contents(dir)).toEqual(before);
  });

  it('info while a run writes to the store: every read exits 0 with figures the store held', async () => {
    const count = 30_000;
    const { dir, old, newest } = await groupReadableStore('busy', count);
    const run: ResultStore = (await openStore(dir))!;
    // A run's open sets results.mdb back to 0600 (README): read access given again meanwhile.
    await chmod(join(dir, 'results.mdb'), 0o640);
    let stored = count;
    let commits = 0;
    let writing = true;
    let latest = newest;
    // Answers bought again (the old pages of the tree freed, and reused two commits later) and new
    // ones, one commit per turn of the event loop, as a run writes; `k-old` is left as it is.
    const writer = (async () => {
      for (let round = 0; writing; round++) {
        const at = new Date().toISOString();
        const batch = Array.from({ length: 40 }, async (_, j) =>
          run.set(`k-${1 + ((round * 997 + j * 7919) % (count - 1))}`, answer(`again-${round}-${j}`, at)),
        );
        batch.push(Promise.resolve(run.set(`new-${round}`, answer(`new-${round}`, at))));
        await Promise.all(batch);
        latest = at;
        stored += 1;
        commits += 1;
      }
    })();
    try {
      for (let i = 0; i < 4; i++) {
        const [from, commitsFrom] = [stored, commits];
        const r = await dqStore(['info', '--store', dir, '--json']);
        expect([r.code, r.signal, r.stderr]).toEqual([0, null, '']);
        const info = JSON.parse(r.stdout) as Info;
        expect(commits - commitsFrom, 'the run committed throughout the read').toBeGreaterThan(5);
        expect(info.entries).toBeGreaterThanOrEqual(from);
        expect(info.entries).toBeLessThanOrEqual(stored);
        expect(info.oldest).toBe(old);
        expect(Date.parse(info.newest!)).toBeGreaterThanOrEqual(Date.parse(newest));
        expect(Date.parse(info.newest!)).toBeLessThanOrEqual(Date.parse(latest));
      }
    } finally {
      writing = false;
      await writer;
      await run.close();
    }
  }, 120_000);

  it('a store copied or restored without its lock file: info by root or by the reader creates none in the folder', async () => {
    const { dir } = await groupReadableStore('restored');
    await rm(join(dir, 'results.mdb-lock'));
    // Root may write the folder: LMDB would make a lock file of root's there, locking the owner out.
    await chmod(dir, 0o770);
    const before = await contents(dir);
    for (const prefix of [[], reader.prefix]) {
      const r = await dqStore(['info', '--store', dir, '--json'], prefix);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(JSON.parse(r.stdout) as Info).toMatchObject({ entries: 3 });
      expect(await contents(dir)).toEqual(before);
    }
  });

  it('a store damaged inside its tree: the reader says so (exit 2), not that runs kept writing (75)', async () => {
    const { dir } = await groupReadableStore('damaged-inside', 3000);
    // The root page of the main tree, from the newest header page (MDB_meta: main tree's md_root at 136, txnid at 152).
    const file = join(dir, 'results.mdb');
    const bytes = await readFile(file);
    const pageSize = bytes.readUInt32LE(48);
    const newest = bytes.readBigUInt64LE(pageSize + 152) > bytes.readBigUInt64LE(152) ? pageSize : 0;
    const root = Number(bytes.readBigUInt64LE(newest + 136));
    bytes.fill(0x5a, root * pageSize, (root + 1) * pageSize);
    await writeFile(file, bytes);
    const r = await dqStore(['info', '--store', dir]);
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toMatch(new RegExp(`^dq-store: the result store ${dir} (is damaged inside|cannot be used)[^\n]*\n$`));
  }, 60_000);

  it.runIf(canMount)('on a read-only mount: info shows the store and changes nothing; prune and clear name the read-only file system', async () => {
    const { dir } = await groupReadableStore('mounted');
    const before = await contents(dir);
    // As root, in a mount namespace of its own where the store's folder is mounted read-only.
    const readOnly = ['unshare', '-m', 'sh', '-c', 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"', dir];
    const info = await dqStore(['info', '--store', dir, '--json'], readOnly);
    expect([info.code, info.stderr]).toEqual([0, '']);
    expect(JSON.parse(info.stdout) as Info).toMatchObject({ location: dir, entries: 3 });
    for (const args of [['prune', '--older-than', '30d'], ['clear']]) {
      const r = await dqStore([...args, '--store', dir], readOnly);
      expect([r.code, r.stdout]).toEqual([2, '']);
      expect(r.stderr).toBe(
        `dq-store: the result store ${dir} cannot be used (EROFS): ${join(dir, 'results.mdb')} is on a read-only file system; dq-store ${args[0]} needs write access: run it where the store is mounted read-write (dq-store info needs read access only)\n`,
      );
    }
    expect(await contents(dir)).toEqual(before);
  });
});
