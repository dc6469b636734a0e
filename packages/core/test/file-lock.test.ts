import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireFileLock, FileLockHeldError } from '@dq/core/lock';

let dir: string;
/**
 * A copy of the built lock module (it imports only node's own modules) in a folder every user may
 * read: a child run as user nobody cannot reach the repository's when it sits in a private folder
 * such as /root.
 */
let moduleDir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-lock-test-'));
  moduleDir = await mkdtemp(join(tmpdir(), 'dq-lock-module-'));
  await copyFile(fileURLToPath(new URL('../dist/lock/file-lock.js', import.meta.url)), join(moduleDir, 'file-lock.js'));
  await writeFile(join(moduleDir, 'package.json'), '{"type":"module"}\n');
  await chmod(moduleDir, 0o755);
});
afterAll(async () => {
  await chmod(dir, 0o700).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
  await rm(moduleDir, { recursive: true, force: true });
});

/**
 * Runs `acquireFileLock(lock)` in a child and returns what it printed: `held` or the error's code
 * and message. `fsize`: under `prlimit --fsize=<bytes>` (a write past the limit fails with EFBIG,
 * as a full disk fails with ENOSPC). `unprivileged`: as user nobody when the tests run as root
 * (root writes into any folder), so a folder's permissions count.
 */
function lockInChild(lock: string, how: { fsize?: number; unprivileged?: boolean }): Promise<{ code: number | null; out: string; err: string }> {
  const script = `import { acquireFileLock } from ${JSON.stringify(pathToFileURL(join(moduleDir, 'file-lock.js')).href)};
    try { const held = await acquireFileLock(${JSON.stringify(lock)}); console.log('held'); await held.release(); }
    catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
  let command = [process.execPath, '--input-type=module', '-e', script];
  if (how.fsize !== undefined) command = ['prlimit', `--fsize=${how.fsize}`, ...command];
  if (how.unprivileged && process.getuid?.() === 0) command = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ...command];
  const child = spawn(command[0]!, command.slice(1), { cwd: moduleDir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  // A lock that retries for ever would hang the test: 10 s is far more than a lock takes.
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out: out.trim(), err });
    });
  });
}

/** Start time of `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot), read here independently of the lock. */
function startOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
}

const linux = process.platform === 'linux';
const bootId = linux ? readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() : '';

/** A process that lives until killed, and its pid. */
async function longLived(): Promise<{ pid: number; kill: () => void }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return { pid: child.pid!, kill: () => child.kill('SIGKILL') };
}

/**
 * Whether runs can be put in a pid namespace of their own (root, a kernel that allows it): as in a
 * container, the first process there is pid 1.
 */
const containers = linux && process.getuid?.() === 0 && spawnSync('unshare', ['-p', '-f', '--mount-proc', 'true']).status === 0;

describe('acquireFileLock', () => {
  it('takes a free lock, refuses a live owner naming its pid, and releases', async () => {
    const lock = join(dir, 'a.lock');
    const held = await acquireFileLock(lock);
    expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    // Our own pid with our own start time: held by us, refused.
    const second = acquireFileLock(lock);
    await expect(second).rejects.toBeInstanceOf(FileLockHeldError);
    await expect(acquireFileLock(lock)).rejects.toThrow(`held by pid ${process.pid}`);
    await held.release();
    expect(await readdir(dir)).not.toContain('a.lock');
  });

  it('does not wait for ever on a named pipe or a link to a device put under the lock name: refused as held, nothing read', async () => {
    for (const [name, make] of [
      ['fifo.lock', (p: string) => spawnSync('mkfifo', [p]).status],
      ['zero.lock', (p: string) => symlinkSync('/dev/zero', p)],
    ] as const) {
      const lock = join(dir, name);
      make(lock);
      const started = Date.now();
      const outcome = await Promise.race([
        acquireFileLock(lock).then(
          () => 'taken',
          (e: unknown) => (e instanceof FileLockHeldError ? 'held' : String(e)),
        ),
        new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5_000).unref()),
      ]);
      expect(outcome, name).toBe('held');
      expect(Date.now() - started, name).toBeLessThan(2_000);
    }
  });

  it('leaves no temporary file behind when the owner cannot be written (file-size limit: EFBIG)', async () => {
    const folder = join(dir, 'fsize');
    await mkdir(folder);
    // The owner ({"pid":…,"host":…,"startedAt":…}) is far longer than 10 bytes.
    const run = await lockInChild(join(folder, 'out.csv.lock'), { fsize: 10 });
    expect(run.code, run.err).toBe(0);
    expect(JSON.parse(run.out)).toMatchObject({ code: 'EFBIG' });
    expect(await readdir(folder)).toEqual([]);
    // With room, the same lock is taken (and released) as usual.
    const roomy = await lockInChild(join(folder, 'out.csv.lock'), { fsize: 1_000_000 });
    expect(roomy.out).toBe('held');
    expect(await readdir(folder)).toEqual([]);
  });

  it("throws the file system's error, creating nothing, in a folder it cannot write", async () => {
    const folder = join(dir, 'read-only');
    await mkdir(folder);
    await chmod(dir, 0o755);
    await chmod(folder, 0o555);
    try {
      const run = await lockInChild(join(folder, 'x.lock'), { unprivileged: true });
      expect(JSON.parse(run.out), run.err).toMatchObject({ code: 'EACCES' });
      expect(await readdir(folder)).toEqual([]);
    } finally {
      await chmod(folder, 0o700);
    }
  });

  it('takes over the lock of a process that is gone, leaving nothing of it behind', async () => {
    const lock = join(dir, 'stale.lock');
    // A pid that is not running: a child that has exited.
    const gone = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.on('exit', () => resolve(child.pid!));
    });
    const owner = JSON.stringify({ pid: gone, host: hostname(), startedAt: new Date().toISOString() });
    await writeFile(lock, owner);
    const held = await acquireFileLock(lock);
    expect(held.tookOver).toBe(true);
    await held.release();
    expect((await readdir(dir)).filter((n) => n.startsWith('stale'))).toEqual([]);
  });

  it.runIf(process.platform === 'linux')('takes over the lock of a killed process its parent has not reaped (a zombie)', async () => {
    const lock = join(dir, 'zombie.lock');
    // A shell that starts a child and then becomes a `sleep`, which never waits for it: the child,
    // once it has exited, stays a zombie as long as the sleep runs. The child lives 1 s, so that
    // it ends after the exec: one that ended before it could be reaped by the shell itself.
    const parent = spawn('sh', ['-c', 'sleep 1 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const zombie = await new Promise<number>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
      for (let i = 0; i < 250 && !(await readFile(`/proc/${zombie}/stat`, 'latin1')).includes(') Z '); i++) await new Promise((r) => setTimeout(r, 20));
      expect(await readFile(`/proc/${zombie}/stat`, 'latin1')).toContain(') Z ');
      await writeFile(lock, JSON.stringify({ pid: zombie, host: hostname(), startedAt: new Date().toISOString() }));
      const held = await acquireFileLock(lock);
      expect(held.tookOver).toBe(true);
      await held.release();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  // Another user's lock is needed, so root (which runs the child as nobody) only.
  it.runIf(process.getuid?.() === 0)("fails with the file system's error, not an endless loop, on a stale lock it may not move aside", async () => {
    const gone = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.on('exit', () => resolve(child.pid!));
    });
    const owner = JSON.stringify({ pid: gone, host: hostname(), startedAt: new Date().toISOString() });
    const folder = join(dir, 'stuck');
    await mkdir(folder);
    await writeFile(join(folder, 'x.lock'), owner);
    await chmod(dir, 0o755);
    await chmod(join(folder, 'x.lock'), 0o644);
    // A shared folder like /tmp (sticky: anyone creates files, only their owner moves them): the
    // stale lock belongs to another user, so it can be read but not moved aside.
    await chmod(folder, 0o1777);
    try {
      const run = await lockInChild(join(folder, 'x.lock'), { unprivileged: true });
      expect(run.code, run.err).toBe(0);
      expect(JSON.parse(run.out), run.err).toMatchObject({ code: 'EPERM' });
    } finally {
      await chmod(folder, 0o700);
    }
    expect(await readdir(folder)).toEqual(['x.lock']);
  });

  it.runIf(linux)("records the owner's start time and the boot id", async () => {
    const lock = join(dir, 'start.lock');
    const held = await acquireFileLock(lock);
    expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid, bootId, procStart: startOf(process.pid) });
    await held.release();
  });

  it.runIf(linux)('takes over a lock whose pid is alive but is another process than the one that took it (the pid was reused)', async () => {
    const lock = join(dir, 'reused.lock');
    const child = await longLived();
    try {
      const live = { pid: child.pid, host: hostname(), startedAt: new Date().toISOString(), bootId };
      // The live child with its own start time holds the lock: refused, naming it.
      await writeFile(lock, JSON.stringify({ ...live, procStart: startOf(child.pid) }));
      await expect(acquireFileLock(lock)).rejects.toThrow(`held by pid ${child.pid}`);
      // Its pid with another start time: the process that took the lock is gone, its pid now the
      // child's (as pid 1 is every run's in a container).
      await writeFile(lock, JSON.stringify({ ...live, procStart: startOf(child.pid) - 1 }));
      const held = await acquireFileLock(lock);
      expect(held.tookOver).toBe(true);
      expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid, procStart: startOf(process.pid) });
      await held.release();
      expect((await readdir(dir)).filter((n) => n.startsWith('reused'))).toEqual([]);
    } finally {
      child.kill();
    }
  });

  it.runIf(linux)('takes over a lock naming our own pid with another start time (a previous process of that pid left it)', async () => {
    const lock = join(dir, 'own-pid.lock');
    await writeFile(
      lock,
      JSON.stringify({ pid: process.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', bootId, procStart: startOf(process.pid) - 1 }),
    );
    const held = await acquireFileLock(lock);
    expect(held.tookOver).toBe(true);
    await held.release();
    expect(await readdir(dir)).not.toContain('own-pid.lock');
  });

  it.runIf(linux)('takes over a lock taken before the machine was rebooted (another boot id), even when its pid and start time are alive now', async () => {
    const lock = join(dir, 'reboot.lock');
    const child = await longLived();
    try {
      const otherBoot = bootId.replace(/^./, (c) => (c === '0' ? '1' : '0'));
      await writeFile(
        lock,
        JSON.stringify({ pid: child.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', bootId: otherBoot, procStart: startOf(child.pid) }),
      );
      const held = await acquireFileLock(lock);
      expect(held.tookOver).toBe(true);
      await held.release();
    } finally {
      child.kill();
    }
  });

  it('judges a lock without a start time (written by the previous version) by its pid alone: a live pid holds it', async () => {
    const lock = join(dir, 'old.lock');
    const child = await longLived();
    try {
      await writeFile(lock, JSON.stringify({ pid: child.pid, host: hostname(), startedAt: new Date().toISOString() }));
      await expect(acquireFileLock(lock)).rejects.toThrow(`held by pid ${child.pid}`);
    } finally {
      child.kill();
    }
  });

  it.runIf(linux)('leaves in place, on release, a lock another process of the same pid has taken since', async () => {
    const lock = join(dir, 'same-pid.lock');
    const held = await acquireFileLock(lock);
    const other = JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), bootId, procStart: startOf(process.pid) + 1 });
    await writeFile(lock, other);
    await held.release();
    expect(await readFile(lock, 'utf8')).toBe(other);
    await rm(lock);
  });

  describe('a lock whose process cannot be checked from here (another host, another pid namespace)', () => {
    const foreign = (extra: Record<string, unknown>) =>
      JSON.stringify({ pid: 4242, host: 'other-host.example', startedAt: '2026-01-01T00:00:00.000Z', ...extra });

    it('is taken over once its owner stopped refreshing it for longer than its lease, and held while it does', async () => {
      const lock = join(dir, 'foreign-lease.lock');
      await writeFile(lock, foreign({ leaseMs: 120_000 }));
      await expect(acquireFileLock(lock)).rejects.toThrow('held by pid 4242 on other-host.example');
      // Its host was killed with its run: the file was last refreshed three minutes ago.
      const then = new Date(Date.now() - 180_000);
      await utimes(lock, then, then);
      const held = await acquireFileLock(lock);
      expect(held.tookOver).toBe(true);
      expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname(), leaseMs: 120_000 });
      await held.release();
    });

    it('is held however old, when it was written without a lease (an older version): a person deletes it', async () => {
      const lock = join(dir, 'foreign-old.lock');
      await writeFile(lock, foreign({}));
      const then = new Date(Date.now() - 24 * 3600_000);
      await utimes(lock, then, then);
      await expect(acquireFileLock(lock)).rejects.toBeInstanceOf(FileLockHeldError);
      await rm(lock);
    });

    it('is refreshed by its holder while held, and no longer once released', async () => {
      const lock = join(dir, 'refreshed.lock');
      const held = await acquireFileLock(lock, { leaseMs: 200 });
      const then = new Date(Date.now() - 60_000);
      await utimes(lock, then, then);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(Date.now() - (await stat(lock)).mtimeMs).toBeLessThan(1_000);
      await held.release();
      expect(await readdir(dir)).not.toContain('refreshed.lock');
    });
  });

  // Two containers on one host with the host's name, writing into one folder (a run in a pid
  // namespace of its own is pid 1 there): the second must not take over the first one's live lock,
  // though a process of that pid (itself) is alive and started at another time. A pid of another
  // namespace cannot be checked, so the lock is held, like another host's.
  it.runIf(containers)(
    "refuses the lock of a live run in another pid namespace (another container), though its pid (1) is alive in the caller's; takes it over once that container is gone and its lease ran out",
    async () => {
      const lock = join(dir, 'container.lock');
      const moduleUrl = JSON.stringify(pathToFileURL(join(moduleDir, 'file-lock.js')).href);
      const inContainer = (script: string) =>
        spawn(
          'unshare',
          [
            '-p',
            '-f',
            '--mount-proc',
            '--kill-child=SIGKILL',
            process.execPath,
            '--input-type=module',
            '-e',
            `import { acquireFileLock } from ${moduleUrl};\n${script}`,
          ],
          {
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
      const first = inContainer(`await acquireFileLock(${JSON.stringify(lock)}); console.log(String(process.pid)); setInterval(() => {}, 1000);`);
      try {
        const firstPid = await new Promise<string>((resolve, reject) => {
          first.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
          first.once('close', (code) => reject(new Error(`the first run ended (${code})`)));
        });
        expect(firstPid).toBe('1');
        expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: 1, host: hostname(), pidNs: expect.stringMatching(/^pid:\[\d+\]$/) });
        const next = inContainer(
          `try { const held = await acquireFileLock(${JSON.stringify(lock)}); console.log(JSON.stringify({ pid: process.pid, tookOver: held.tookOver })); await held.release(); }
         catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`,
        );
        let out = '';
        next.stdout.on('data', (d: Buffer) => (out += d.toString()));
        const timer = setTimeout(() => next.kill('SIGKILL'), 10_000);
        await new Promise((resolve) => next.once('close', resolve));
        clearTimeout(timer);
        expect(JSON.parse(out.trim())).toMatchObject({ code: 'lock-held' });
        expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ pid: 1 });

        // The first container is killed with its run; once its lease ran out (two minutes without a
        // refresh, here set back by hand), the next container's run takes the lock over.
        const killed = new Promise((resolve) => first.once('close', resolve));
        first.kill('SIGKILL');
        await killed;
        const then = new Date(Date.now() - 180_000);
        await utimes(lock, then, then);
        const after = inContainer(
          `try { const held = await acquireFileLock(${JSON.stringify(lock)}); console.log(JSON.stringify({ pid: process.pid, tookOver: held.tookOver })); await held.release(); }
         catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`,
        );
        let taken = '';
        after.stdout.on('data', (d: Buffer) => (taken += d.toString()));
        await new Promise((resolve) => after.once('close', resolve));
        expect(JSON.parse(taken.trim())).toEqual({ pid: 1, tookOver: true });
        expect(await readdir(dir)).not.toContain('container.lock');
      } finally {
        if (first.exitCode === null && first.signalCode === null) {
          const killed = new Promise((resolve) => first.once('close', resolve));
          first.kill('SIGKILL');
          await killed;
        }
        await rm(lock, { force: true });
      }
    },
  );
});
