import { spawnSync } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '@dq/core/store';
import { runCommand, type CommandExit } from '@dq/test-support/cli';
import { useSandbox } from '@dq/test-support/use';

// Where the result store's defaults write, in the environments runs really have: a scheduler's task
// with another working folder, a container under a uid without a home, a home or cache folder this
// user may not write, a read-only root file system, a store folder behind a symbolic link. A run
// either keeps its answers where the README says, or stops before its first paid call with exit 2
// and one line naming the folder, the cause and what to do (README "The result store").

const CORE = fileURLToPath(new URL('..', import.meta.url));
const DQ_STORE = join(CORE, 'bin', 'dq-store.js');
const dist = (path: string) => JSON.stringify(pathToFileURL(join(CORE, 'dist', path)).href);
/** A connector's start, as dq-csv and dq-kafka make it: the store `--store` names (TEST_STORE, else the default), then one paid call. */
const RUN = `import { createEngine, createSilentLogger, exitCodeFor } from ${dist('index.js')};
import { openStore } from ${dist('store/index.js')};
try {
  const resultStore = await openStore(process.env.TEST_STORE || undefined);
  const engine = createEngine({ mode: 'address', baseUrl: process.env.DQ_BASE_URL, apiKey: process.env.DQ_API_KEY, resultStore, threads: 0, logger: createSilentLogger() });
  const [result] = await engine.process([{ street: 'Hauptstr.', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' }]);
  await engine.close();
  await resultStore?.close();
  process.stdout.write(JSON.stringify({ source: result.source, store: resultStore?.location }) + '\\n');
} catch (e) {
  // As dq-csv reports the error that stopped a run: its code and message, or a stack trace.
  process.stderr.write(e.code === undefined ? String(e.stack) : \`run: \${e.code}: \${e.message}\\n\`);
  process.exitCode = exitCodeFor(e);
}
`;

const sandbox = useSandbox();
const isRoot = process.getuid?.() === 0;
/** A user id no user database knows: a container run with an arbitrary uid. */
const NO_SUCH_UID = 7654321;
/** Another user, owner of the folders this one may not write. */
const OTHER_UID = 1;
/** Whether a child may mount in a mount namespace of its own (root with CAP_SYS_ADMIN). */
const canMount = isRoot && spawnSync('unshare', ['-m', 'mount', '--bind', tmpdir(), tmpdir()]).status === 0;
const asUid = (uid: number) => ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups'];

let base: string;
let script: string;
/**
 * How a child runs without root's power over file permissions: as user nobody, or, where nobody
 * cannot reach the repository (a clone in a private folder such as /root), as root without the
 * capabilities that override them. Not root at all: as this user (the permission tests are skipped).
 */
let runner: { prefix: string[]; uid: number; anyUid: boolean };

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'dq-env-'));
  await chmod(base, 0o755);
  script = join(base, 'run.mjs');
  await writeFile(script, RUN, { mode: 0o644 });
  runner = { prefix: [], uid: process.getuid?.() ?? 0, anyUid: false };
  if (!isRoot) return;
  // The modules a run loads (lmdb's native one included), loaded as nobody.
  const load = `for (const m of [${dist('index.js')}, ${dist('store/index.js')}, 'lmdb']) await import(m);`;
  const reached = spawnSync('setpriv', [...asUid(65534), process.execPath, '--input-type=module', '-e', load], { cwd: CORE, stdio: 'ignore' }).status === 0;
  runner = reached
    ? { prefix: asUid(65534), uid: 65534, anyUid: true }
    : { prefix: ['setpriv', '--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search'], uid: 0, anyUid: false };
});
afterAll(async () => rm(base, { recursive: true, force: true }));
beforeEach(() => sandbox.reset());

type Ran = CommandExit;

/** Runs `command` with only PATH, the sandbox's URL and key, and `env` set (no HOME unless given), in `cwd`. */
function run(command: string[], env: Record<string, string>, cwd = base): Promise<Ran> {
  return runCommand(command, { cwd, bareEnv: true, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...sandbox.env(), ...env }, timeoutMs: 20_000 });
}

const connector = (env: Record<string, string>, prefix: string[] = [], cwd?: string) => run([...prefix, process.execPath, script], env, cwd);
const dqStore = (args: string[], env: Record<string, string>, prefix: string[] = []) => run([...prefix, process.execPath, DQ_STORE, ...args], env);
const billable = () => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

/** A stop the way a scheduler's log should show it: exit 2 (or `code`), one line, no stack trace, nothing bought. */
function expectRefused(r: Ran, line: RegExp, code = 2): void {
  expect([r.code, r.signal], r.stderr).toEqual([code, null]);
  expect(r.stderr.trimEnd().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr).toMatch(line);
  expect(r.stderr).not.toMatch(/\n\s+at |unexpected error/);
  expect(billable()).toBe(0);
}

/** A new folder in the test's, owned by `uid` with `mode`. */
async function folder(name: string, uid: number, mode: number): Promise<string> {
  const path = join(base, name);
  await mkdir(path, { recursive: true });
  await chown(path, uid, uid);
  await chmod(path, mode);
  return path;
}

const escape = (s: string) => s.replaceAll(/[.*+?^${}()|[\]\\/]/g, '\\$&');

describe('the default store folder', () => {
  it('XDG_CACHE_HOME relative ("~/.cache" unexpanded included) or empty is ignored: the store is in $HOME/.cache, found by the next run from another working folder, private whatever the umask', async () => {
    const home = await mkdtemp(join(base, 'home-'));
    const store = join(home, '.cache', 'dq-connectors', 'store');
    const umask000 = ['sh', '-c', 'umask 000 && exec "$@"', 'sh'];
    for (const [i, xdg] of ['cache', '~/.cache', ''].entries()) {
      const cwd = await mkdtemp(join(base, 'task-'));
      const r = await connector({ HOME: home, XDG_CACHE_HOME: xdg }, umask000, cwd);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ source: i === 0 ? 'api' : 'store', store });
      // Nothing in the task's working folder, where the next run (another folder) would not look.
      expect(await readdir(cwd)).toEqual([]);
    }
    expect(billable()).toBe(1);
    expect((await stat(store)).mode & 0o777).toBe(0o700);
    for (const file of await readdir(store)) expect((await stat(join(store, file))).mode & 0o777).toBe(0o600);
  });

  it.runIf(isRoot)(
    'no home at all (HOME unset, a uid the user database does not know): a run and dq-store stop with exit 2 saying what to set; --help still works',
    async () => {
      // Able to read any file (not to write one): the repository may sit in a folder other users cannot reach.
      const noHome = [...asUid(NO_SUCH_UID), '--inh-caps=+dac_read_search', '--ambient-caps=+dac_read_search'];
      expectRefused(
        await connector({}, noHome),
        /^run: usage: the result store has no default folder: .*user id 7654321 has no home folder.*set XDG_CACHE_HOME or HOME, or give --store a folder, or pass --store off/,
      );
      for (const command of [['info'], ['init'], ['clear']]) {
        expectRefused(
          await dqStore(command, {}, noHome),
          /^dq-store: the result store has no default folder: .*set XDG_CACHE_HOME or HOME, or give --store a folder\n$/,
        );
      }
      const help = await dqStore(['--help'], {}, noHome);
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toMatch(/default\n +none here: set XDG_CACHE_HOME or HOME, or give --store/);
      // What the line says to do works.
      const cache = await folder('uid-cache', NO_SUCH_UID, 0o700);
      const r = await connector({ XDG_CACHE_HOME: cache }, noHome);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ source: 'api', store: join(cache, 'dq-connectors', 'store') });
    },
  );
});

describe.runIf(isRoot)('a folder this user may not write', () => {
  it('a home of another user, a cache folder made read-only, a store another user made: exit 2 before any call, naming the folder that refused, its owner and --store', async () => {
    const me = runner.uid;
    const home = await folder('others-home', OTHER_UID, 0o755);
    const readOnly = await folder('read-only-cache', me, 0o555);
    const shared = await folder('shared-cache', 0, 0o1777);
    // Another user's store in the cache folder both use.
    const theirs = join(shared, 'dq-connectors', 'store');
    await (await openStore(theirs))!.close();
    for (const path of [join(shared, 'dq-connectors'), theirs]) await chown(path, OTHER_UID, OTHER_UID);
    const cases: Array<[Record<string, string>, RegExp]> = [
      [
        { HOME: home },
        new RegExp(
          `the result store ${escape(home)}/\\.cache/dq-connectors/store cannot be created \\(EACCES\\): user id ${me} may not create folders in ${escape(home)} \\(owned by user id ${OTHER_UID}, mode 0755\\); give --store a folder this user may write \\(or set XDG_CACHE_HOME to one\\)`,
        ),
      ],
      [
        { XDG_CACHE_HOME: readOnly },
        new RegExp(`may not create folders in ${escape(readOnly)} \\(owned by user id ${me}, mode 0555\\); give --store a folder`),
      ],
      [
        { XDG_CACHE_HOME: shared },
        new RegExp(
          `the result store ${escape(theirs)} cannot be used \\(EACCES\\): user id ${me} may not use ${escape(join(shared, 'dq-connectors'))} \\(owned by user id ${OTHER_UID}, mode 0700\\); give --store a folder`,
        ),
      ],
    ];
    for (const [env, line] of cases) {
      const run = await connector(env, runner.prefix);
      expectRefused(run, line);
      expect(run.stderr).toMatch(/^run: store-permission-denied: .*, or pass --store off \(every answer is then bought again\)\n$/);
      // dq-store names the same cause, without the run's way out (it refuses --store off).
      const init = await dqStore(['init'], env, runner.prefix);
      expectRefused(init, line);
      expect(init.stderr).not.toContain('--store off');
    }
    expectRefused(await dqStore(['info'], { XDG_CACHE_HOME: shared }, runner.prefix), /cannot be used \(EACCES\): .*owned by user id/);
    // Their store is as they left it: private, no file of this user's in it.
    expect((await readdir(theirs)).sort()).toEqual(['results.mdb', 'results.mdb-lock']);
  });

  it.runIf(canMount)('a read-only file system (a container whose root is read-only): exit 2 naming the read-only folder, not an I/O error', async () => {
    const cache = await folder('read-only-fs', 0, 0o777);
    // The folder read-only in a mount namespace of the child's own.
    const readOnlyFs = ['unshare', '-m', 'sh', '-c', 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"', 'sh', cache];
    const line = new RegExp(
      `the result store ${escape(cache)}/dq-connectors/store cannot be created \\(EROFS\\): ${escape(cache)} is on a read-only file system; give --store a folder this user may write`,
    );
    expectRefused(await connector({ XDG_CACHE_HOME: cache }, readOnlyFs), line);
    expectRefused(await dqStore(['init'], { XDG_CACHE_HOME: cache }, readOnlyFs), line);
  });
});

describe('a --store folder behind a symbolic link, or written as for a shell', () => {
  it('to a folder: the store is kept there; to nothing (a volume not mounted), under a file or after an unexpanded "~": exit 2 naming the cause', async () => {
    const real = await mkdtemp(join(base, 'volume-'));
    const link = join(base, 'store-link');
    await symlink(real, link);
    for (const source of ['api', 'store']) {
      const r = await connector({ TEST_STORE: link });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ source });
    }
    expect((await readdir(real)).sort()).toEqual(['results.mdb', 'results.mdb-lock']);
    sandbox.reset();

    const dangling = join(base, 'unmounted');
    await symlink(join(base, 'no-such-volume'), dangling);
    const line = new RegExp(
      `${escape(dangling)} is a symbolic link to ${escape(join(base, 'no-such-volume'))}, which does not exist: create that folder, or give --store`,
    );
    expectRefused(await connector({ TEST_STORE: dangling }), line);
    expectRefused(await dqStore(['init', '--store', dangling], {}), line);

    // A "~" no shell expanded (a systemd unit, a container's arguments): never a folder named "~" here.
    const cwd = await mkdtemp(join(base, 'unit-'));
    expectRefused(
      await connector({ TEST_STORE: '~/dq-store' }, [], cwd),
      /^run: config-invalid: --store ~\/dq-store: the "~" was not expanded .*give the folder's full path\n$/,
    );
    expect(await readdir(cwd)).toEqual([]);

    const file = join(base, 'a-file');
    await writeFile(file, '');
    expectRefused(await connector({ HOME: base, XDG_CACHE_HOME: file }), new RegExp(`is not a folder \\(${escape(file)} is a file\\)`));
  });
});

describe('a disk with no room for a new store', () => {
  const full = /the result store .* cannot be used: (its file reached the file-size limit \(EFBIG|the disk is full \(ENOSPC\))/;
  it('a file-size limit (ulimit -f) below what a new store needs: exit 1 naming the limit before any call, neither a crash (SIGSEGV) nor an answer bought and not kept', async () => {
    // 4 KiB: less than LMDB lays out; 16 KiB: less than the first commit makes room for.
    for (const limit of [4096, 16384]) {
      sandbox.reset();
      const limited = ['prlimit', `--fsize=${limit}`];
      const cache = await mkdtemp(join(base, 'limited-'));
      expectRefused(await connector({ XDG_CACHE_HOME: cache }, limited), full, 1);
      expectRefused(await dqStore(['init'], { XDG_CACHE_HOME: cache }, limited), full);
      // Nothing left behind that a later run would take for a store.
      expect(await readdir(join(cache, 'dq-connectors', 'store'))).toEqual([]);
    }
  });

  it.runIf(canMount)('a full disk (a small volume another file filled): exit 1 naming ENOSPC before any call, not a crash (SIGBUS)', async () => {
    const disk = await folder('small-disk', 0, 0o755);
    const filled = [
      'unshare',
      '-m',
      'sh',
      '-c',
      'mount -t tmpfs -o size=64k tmpfs "$1" && cat /dev/zero >"$1/filler" 2>/dev/null; shift && exec "$@"',
      'sh',
      disk,
    ];
    expectRefused(await connector({ XDG_CACHE_HOME: disk }, filled), full, 1);
    expectRefused(await dqStore(['init'], { XDG_CACHE_HOME: disk }, filled), full);
  });
});
