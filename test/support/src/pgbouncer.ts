import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './pg-launch.js';

/** How PgBouncer hands server connections to its clients (`pool_mode`). */
export type PoolMode = 'session' | 'transaction' | 'statement';

/** A running PgBouncer in front of one PostgreSQL server. */
export interface TestPgBouncer {
  /** Port PgBouncer listens on (127.0.0.1). */
  port: number;
  /** `url` (a database URL of the server behind it) with host and port turned to PgBouncer's. */
  through(url: string): string;
  /** Stops PgBouncer and deletes its folder. */
  stop(): Promise<void>;
}

/** Settings of {@link startPgBouncer}. */
export interface PgBouncerSettings {
  /** Database URL of the server (any database: every database name is passed on); user and password are PgBouncer's too. */
  serverUrl: string;
  /** `pool_mode` (default transaction). */
  poolMode?: PoolMode;
  /** Server connections per database and user (`default_pool_size`, default 20). */
  poolSize?: number;
}

/** The `pgbouncer` binary (Debian package `pgbouncer`), or undefined when it is not installed. */
export function pgbouncerBinary(): string | undefined {
  for (const path of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    if (spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 }).status === 0) return path;
  }
  return undefined;
}

/**
 * Starts PgBouncer (the binary of {@link pgbouncerBinary}) on a free local port in front of the
 * server of `serverUrl`, with `md5` authentication of that URL's user and password (a userlist of
 * its own) and the given `pool_mode`. PgBouncer refuses to run as root: as root it runs as the OS
 * user `postgres` (as the test PostgreSQL does). Waits until it accepts connections; one that cannot
 * start fails at once with its log.
 */
export async function startPgBouncer(settings: PgBouncerSettings): Promise<TestPgBouncer> {
  const binary = pgbouncerBinary();
  if (binary === undefined) throw new Error('pgbouncer is not installed (Debian: apt-get install pgbouncer)');
  const server = new URL(settings.serverUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'dq-pgbouncer-'));
  const quoted = (s: string): string => `"${s.replaceAll('"', '""')}"`;
  const files = {
    ini: join(dir, 'pgbouncer.ini'),
    users: join(dir, 'userlist.txt'),
    log: join(dir, 'pgbouncer.log'),
  };
  await writeFile(
    files.ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = md5',
      `auth_file = ${files.users}`,
      `pool_mode = ${settings.poolMode ?? 'transaction'}`,
      `default_pool_size = ${settings.poolSize ?? 20}`,
      'max_client_conn = 500',
      `logfile = ${files.log}`,
      '',
    ].join('\n'),
  );
  await writeFile(files.users, `${quoted(user)} ${quoted(password)}\n`, { mode: 0o600 });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    for (const path of [dir, files.ini, files.users]) await chown(path, uid, gid);
  }
  const child = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), files.ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited (${signal ?? code})`));
  const log = async (): Promise<string> => `${stderr}${await readFile(files.log, 'utf8').catch(() => '')}`.trim();
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`pgbouncer ${exited}: ${await log()}`);
    const open = await new Promise<boolean>((done) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), done(true)));
      socket.once('error', () => done(false));
    });
    if (open) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`pgbouncer did not listen on port ${port} within 15 s: ${await log()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    through(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    async stop() {
      if (exited === undefined) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await gone;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
