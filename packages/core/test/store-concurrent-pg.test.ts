import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '@dq/core/store';
import { usePostgres, withClient } from '@dq/test-support/pg';
import { useSandbox } from '@dq/test-support/use';

// `dq-store` (README "The result store") on the shared Postgres store while runs write to it,
// each a real process, against a real Postgres and the sandbox over real HTTP (its `billable`
// counter is what the account pays).

const CORE = fileURLToPath(new URL('..', import.meta.url));
const DQ_STORE = join(CORE, 'bin', 'dq-store.js');
const dist = (path: string) => JSON.stringify(pathToFileURL(join(CORE, 'dist', path)).href);

/** A connector's run: the store TEST_STORE names (TEST_MAX_AGE_MS), then TEST_ROWS addresses named TEST_PREFIX, 20 at a time. */
const RUN = `import { createEngine, createSilentLogger, exitCodeFor } from ${dist('index.js')};
import { openStore } from ${dist('store/index.js')};
try {
  const maxAge = process.env.TEST_MAX_AGE_MS;
  const resultStore = await openStore(process.env.TEST_STORE, maxAge === undefined ? {} : { maxAgeMs: Number(maxAge) });
  const engine = createEngine({ mode: 'address', baseUrl: process.env.DQ_BASE_URL, apiKey: process.env.DQ_API_KEY, resultStore, threads: 0, concurrency: 4, logger: createSilentLogger() });
  const rows = Array.from({ length: Number(process.env.TEST_ROWS) }, (_, i) => ({ street: process.env.TEST_PREFIX + 'str. ' + i, houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' }));
  let fromStore = 0;
  for (let at = 0; at < rows.length; at += 20) for (const r of await engine.process(rows.slice(at, at + 20))) if (r.source === 'store') fromStore += 1;
  await engine.close();
  await resultStore.close();
  process.stdout.write(JSON.stringify({ fromStore }) + '\\n');
} catch (e) {
  process.stderr.write(e.code === undefined ? String(e.stack) : \`run: \${e.code}: \${e.message}\\n\`);
  process.exitCode = exitCodeFor(e);
}
`;

const sandbox = useSandbox();
const server = usePostgres();
const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

let base: string;
let script: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'dq-store-concurrent-pg-'));
  script = join(base, 'run.mjs');
  await writeFile(script, RUN);
});
afterAll(async () => base && rm(base, { recursive: true, force: true }));
beforeEach(() => sandbox.reset());

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function node(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...sandbox.env(), DQ_STORE: '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

const run = (store: string, prefix: string, rows: number, env: Record<string, string> = {}): Promise<Ran> =>
  node([script], { TEST_STORE: store, TEST_PREFIX: prefix, TEST_ROWS: String(rows), ...env });
const dqStore = (args: string[]): Promise<Ran> => node([DQ_STORE, ...args]);

/** `n` entries checked 40 days ago, of inputs no run here asks for. */
async function fillOld(db: string, n: number): Promise<void> {
  await (await openStore(db))!.close();
  await withClient(db, async (c) => {
    await c.query(
      `INSERT INTO dq_store.results SELECT 'old-' || i, json_build_object('status', 'accepted', 'resultClass', 'A', 'requestId', 'r' || i, 'note', repeat('x', 300)),
              now() - interval '40 days' FROM generate_series(1, $1) i`,
      [n],
    );
    await c.query('VACUUM ANALYZE dq_store.results');
  });
}

describe('dq-store on a Postgres store that runs write to', () => {
  it('prune and clear of 200,000 entries while two runs write: both runs end with exit 0, each input is paid once, and a rerun pays only for what clear removed', async () => {
    const db = await server.createDatabase();
    await fillOld(db, 200_000);
    const rows = 300;
    const runs = Promise.all([run(db, 'North', rows), run(db, 'South', rows)]);
    let running = true;
    void runs.then(() => (running = false));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const pruned = await dqStore(['prune', '--older-than', '30d', '--store', db, '--json']);
    const trims: Ran[] = [];
    for (let i = 0; running || i < 2; i++) trims.push(await dqStore([i % 2 ? 'clear' : 'info', '--store', db, '--json']));
    const [north, south] = await runs;
    for (const r of [north!, south!]) expect([r.code, r.signal, r.stderr]).toEqual([0, null, '']);
    expect(billable()).toBe(2 * rows);
    expect([pruned.code, pruned.stderr]).toEqual([0, '']);
    // Every old entry, none of the runs' answers (all of them younger than 30 days).
    expect(JSON.parse(pruned.stdout)).toMatchObject({ command: 'prune', removed: 200_000 });
    expect(pruned.ms).toBeLessThan(10_000);
    for (const t of trims) expect([t.code, t.signal, t.stderr]).toEqual([0, null, '']);

    const { entries } = JSON.parse((await dqStore(['info', '--store', db, '--json'])).stdout) as { entries: number };
    const again = await Promise.all([run(db, 'North', rows), run(db, 'South', rows)]);
    for (const r of again) expect([r.code, r.stderr]).toEqual([0, '']);
    expect(again.map((r) => (JSON.parse(r.stdout) as { fromStore: number }).fromStore).reduce((a, b) => a + b)).toBe(entries);
    expect(billable() - 2 * rows).toBe(2 * rows - entries);
  }, 120_000);

  it("a DELETE on the store's rows left open by another session stops a run at its query limit with exit 75, naming that session", async () => {
    const db = await server.createDatabase();
    expect((await run(db, 'West', 10)).code).toBe(0);
    const trimmer = new pg.Client({ connectionString: db });
    await trimmer.connect();
    try {
      await trimmer.query('BEGIN');
      await trimmer.query('DELETE FROM dq_store.results');
      const { rows } = await trimmer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // --max-age 0: every input is bought again, and its answer written over the row the DELETE holds.
      const r = await run(`${db}?query_timeout=2000`, 'West', 10, { TEST_MAX_AGE_MS: '0' });
      expect(r.code, r.stderr).toBe(75);
      expect(r.ms).toBeLessThan(15_000);
      expect(r.stderr.split('\n')).toHaveLength(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^run: store-unreachable: .*its table dq_store\\.results is locked by another session, pid ${rows[0]!.pid} \\(user \\w+, row locks, transaction open since `,
        ),
      );
    } finally {
      await trimmer.query('ROLLBACK');
      await trimmer.end();
    }
  }, 60_000);
});

describe('dq-store on a Postgres store, given the wrong database or role', () => {
  /** A login role of its own (roles are the whole server's), with `password`. */
  async function role(db: string, name: string): Promise<string> {
    const user = `${name}_${Math.random().toString(36).slice(2, 8)}`;
    await withClient(db, (c) => c.query(`CREATE ROLE ${user} LOGIN PASSWORD 'pw-${user}'`));
    const url = new URL(db);
    url.username = user;
    url.password = `pw-${user}`;
    return url.href;
  }
  const hasSchema = (db: string) => withClient(db, async (c) => (await c.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'dq_store'`)).rowCount === 1);

  it('info, prune and clear on a database without a store say so and create nothing; init by a role without CREATE names the GRANT', async () => {
    const db = await server.createDatabase();
    const plain = await role(db, 'plain');
    const runs = await Promise.all([
      dqStore(['info', '--store', db]),
      dqStore(['prune', '--older-than', '30d', '--store', db, '--json']),
      dqStore(['clear', '--store', plain]),
    ]);
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^(no result store in postgres:\/\/|\{"command":"prune","removed":0,"exists":false\})/);
    }
    expect(await hasSchema(db)).toBe(false);
    const init = await dqStore(['init', '--store', plain]);
    expect(init.code).toBe(2);
    const [user, name] = [new URL(plain).username, new URL(plain).pathname.slice(1)];
    expect(init.stderr).toContain(`the database user ${user} may not create schema dq_store in database ${name}; GRANT CREATE ON DATABASE ${name} TO ${user}`);
    expect(init.stderr).not.toContain('--store off');
    expect(init.stderr).not.toContain(`pw-${user}`);
    expect(await hasSchema(db)).toBe(false);
  });

  it('prune and clear by a role that may only read name the GRANT; a URL asking for TLS of a server without it exits 2, not 75', async () => {
    const db = await server.createDatabase();
    await (await openStore(db))!.close();
    const reader = await role(db, 'reader');
    const user = new URL(reader).username;
    await withClient(db, (c) => c.query(`GRANT USAGE ON SCHEMA dq_store TO ${user}; GRANT SELECT ON dq_store.results, dq_store.schema_version TO ${user}`));
    const [info, prune, clear, tls] = await Promise.all([
      dqStore(['info', '--store', reader, '--json']),
      dqStore(['prune', '--older-than', '30d', '--store', reader]),
      dqStore(['clear', '--store', reader]),
      dqStore(['info', '--store', `${db}?sslmode=require`, '--json']),
    ]);
    expect(info.code, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ entries: 0 });
    for (const r of [prune, clear]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('GRANT SELECT, INSERT, UPDATE, DELETE ON dq_store.results');
      expect(r.stderr).not.toContain('--store off');
    }
    expect(tls.code).toBe(2);
    expect(tls.stdout).toBe('');
    expect(tls.stderr).toContain('the server does not support SSL connections, and the URL asks for them (sslmode)');
  });
});
