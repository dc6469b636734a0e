import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEFAULT_API_KEY, generateDirtyInputs, startSandbox } from '@dq/sandbox';
import type { Sandbox, SandboxConfig } from '@dq/sandbox';
import { startPostgres, withClient } from '@dq/test-support/pg';

export { withClient };
import type { TestPostgres } from '@dq/test-support/pg';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
export const API_KEY = DEFAULT_API_KEY;

/** The customers table's mapping: every address field to its column. */
export const MAP =
  'street=street,houseNumber=house_number,postalCode=postal_code,locality=city,addressLine=address_line,localityLine=locality_line,country=country';
export const COLUMNS = ['street', 'house_number', 'postal_code', 'city', 'address_line', 'locality_line', 'country'] as const;

/** A sandbox account without rate limits (tests go as fast as the machine), optionally with a quota. */
export function sandboxConfig(quota: number | null = null): SandboxConfig {
  return { accounts: [{ id: 'test', apiKeys: [API_KEY], plan: { quota, validUntil: null }, rateLimits: { batch: 0, validate: 0 } }] };
}

export interface TestEnv {
  pg: TestPostgres;
  sandbox: Sandbox;
  stop(): Promise<void>;
}

/** A real PostgreSQL from the harness and a sandbox on port 0. */
export async function startEnv(quota: number | null = null): Promise<TestEnv> {
  const [server, sandbox] = await Promise.all([startPostgres(), startSandbox({ config: sandboxConfig(quota) })]);
  return {
    pg: server,
    sandbox,
    async stop() {
      await sandbox.close();
      await server.stop();
    },
  };
}

/**
 * Creates `public.customers` (id bigint primary key + the seven address columns) holding `n`
 * dirty inputs of the sandbox's labelled generator; ids are 1..n.
 */
/** Results rows of run `runId` (0 before dq-pg made its schema): how far a run got. */
export async function resultRows(db: string, runId: string): Promise<number> {
  return withClient(db, async (c) => {
    const exists = await c.query(`SELECT to_regclass('dq_cleanse.results') IS NOT NULL AS ok`);
    if (!exists.rows[0]?.ok) return 0;
    const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = $1`, [runId]);
    return rows[0]?.n ?? 0;
  });
}

export async function createCustomers(url: string, n: number, seed = 7): Promise<void> {
  const inputs = generateDirtyInputs(n, { seed });
  await withClient(url, async (c) => {
    await c.query(`CREATE TABLE customers (id bigint PRIMARY KEY, street text, house_number text, postal_code varchar(10),
                     city text, address_line text, locality_line text, country char(2))`);
    const cols: (string | null)[][] = COLUMNS.map(() => []);
    inputs.forEach(({ input }) => {
      const v = [input.street, input.houseNumber, input.postalCode, input.locality, input.addressLine, input.localityLine, input.country];
      v.forEach((x, i) => cols[i]?.push(x ?? null));
    });
    await c.query(
      `INSERT INTO customers SELECT g, s, h, p, l, a, ll, co
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
              WITH ORDINALITY AS u(s, h, p, l, a, ll, co, g)`,
      cols,
    );
  });
}

/** Every row of `table` as key → JSON of its mapped columns, for before/after comparisons. */
export async function snapshot(url: string, table = 'customers'): Promise<Map<string, string>> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ id: string; v: string }>(
      `SELECT id::text AS id, json_build_array(${COLUMNS.join(', ')})::text AS v FROM ${table} ORDER BY id`,
    );
    return new Map(rows.map((r) => [r.id, r.v]));
  });
}

/** Billable calls the sandbox answered so far. */
export function billable(sandbox: Sandbox): number {
  return Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);
}

/** The cleanse arguments for the customers table against `sandbox`. */
export function cleanseArgs(db: string, sandbox: Sandbox, extra: string[] = []): string[] {
  return ['cleanse', '--db', db, '--table', 'public.customers', '--key', 'id', '--map', MAP, '--base-url', sandbox.url, '--rate-limit', '0', ...extra];
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts the built CLI as a child process (API key from the environment, as recommended). */
export function spawnCli(args: string[]): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, DQ_API_KEY: API_KEY }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      // A signal this test did not send (the OOM killer, a crash) would otherwise show only as "exit code null".
      if (signal !== null && !child.killed) process.stderr.write(`dq-pg ${args.join(' ')} was ended by ${signal}; its stderr:\n${stderr}\n`);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, done };
}

/** Runs the CLI to the end. */
export function runCli(args: string[]): Promise<CliResult> {
  return spawnCli(args).done;
}

/** The last `{"type":"summary"}` line a cleanse printed. */
export function summaryOf(result: CliResult): Record<string, unknown> {
  const line = result.stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.includes('"type":"summary"'));
  if (!line) throw new Error(`no summary line; exit ${result.code}; stderr: ${result.stderr}`);
  return JSON.parse(line) as Record<string, unknown>;
}

/**
 * Creates a login role that owns nothing dq-pg uses and gives it exactly the grants the README
 * lists for an ETL role (the bookkeeping schema must exist: `dq-pg init` as its owner); returns the
 * role's connection URL for the database at `ownerUrl`.
 */
export async function createEtlRole(ownerUrl: string, tables: readonly string[] = ['public.customers']): Promise<string> {
  const name = `etl_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await withClient(ownerUrl, (c) => c.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`));
  await grantEtl(ownerUrl, name, tables);
  const url = new URL(ownerUrl);
  url.username = name;
  url.password = password;
  return url.toString();
}

/** Gives role `name` the grants the README lists for an ETL role (again, e.g. after `dq-pg init` upgraded the layout). */
export async function grantEtl(ownerUrl: string, name: string, tables: readonly string[] = ['public.customers']): Promise<void> {
  await withClient(ownerUrl, async (c) => {
    // The README's grants, word for word.
    await c.query(`GRANT USAGE ON SCHEMA dq_cleanse TO ${name}`);
    await c.query(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA dq_cleanse TO ${name}`);
    // The account's shared rate budget: made by `dq-pg init` or by a run with a rate limit; a database
    // cleaned only with --rate-limit 0 (as these tests do) and no `init` since has none to grant yet.
    const budget = await c.query<{ present: boolean }>(`SELECT to_regclass('dq_throttle') IS NOT NULL AS present`);
    if (budget.rows[0]?.present) await c.query(`GRANT SELECT, INSERT, UPDATE ON dq_throttle TO ${name}`);
    const keys = await c.query<{ present: boolean }>(`SELECT to_regclass('dq_throttle_keys') IS NOT NULL AS present`);
    if (keys.rows[0]?.present) await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON dq_throttle_keys TO ${name}`);
    for (const table of tables) await c.query(`GRANT SELECT, UPDATE ON ${table} TO ${name}`);
    await c.query(`GRANT USAGE ON SCHEMA dq_store TO ${name}`);
    await c.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA dq_store TO ${name}`);
  });
}

/** Each row's full text form (every column, exactly as stored), by id: the customers table's rows as a byte-exact comparison sees them. */
export async function rowTexts(db: string): Promise<Map<string, string>> {
  return withClient(db, async (c) => {
    const { rows } = await c.query<{ id: string; t: string }>('SELECT id::text AS id, c::text AS t FROM customers c ORDER BY id');
    return new Map(rows.map((r) => [r.id, r.t]));
  });
}

/** Resolves once `check` says so (asked every 50 ms); fails naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs the CLI, killed after `ms` (a run that never ends fails here instead of hanging the suite). */
export async function runWithin(args: string[], ms: number): Promise<CliResult> {
  const { child, done } = spawnCli(args);
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
  }
}
