import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@dq/core';
import type { Engine, EngineConfig } from '@dq/core';
import { keyIdOf } from '@dq/core/throttle';
import { ensureThrottleTable } from '@dq/core/throttle-pg';
import { runNode } from '@dq/test-support/cli';
import { sampleArgs } from '@dq/test-support/csv';
import { usePostgres, withClient } from '@dq/test-support/pg';
import { useSandbox, useTempDir } from '@dq/test-support/use';
import { addresses, batchAnswer, closeAfterEach, startScriptedPlatform, testEngine } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

// One API key split over two rows of the shared budget (README, "One rate budget per account"):
// a process given --account and one not, using the same key at the same time, each pace their own
// row at the whole limit. The process that starts second warns, naming the other account, on a
// real PostgreSQL; the row each uses stays as it is, and the run goes on.

const KEY = 'split-key-4f7a2c';
const OTHER_KEY = 'other-key-9b3e10';
const server = usePostgres();
let platform: ScriptedPlatform | undefined;
const engines: Engine[] = [];

closeAfterEach(
  () => [...engines.splice(0), platform],
  () => (platform = undefined),
);

/** An engine on the budget `db` with the API key `key` (and `account`, if given), whose log lines are kept. */
function start(db: string, key: string, account: string | undefined, extra: Partial<EngineConfig> = {}) {
  const lines: string[] = [];
  const engine = testEngine(platform!.url, key, {
    budget: db,
    ...(account === undefined ? {} : { account }),
    threads: 0,
    concurrency: 2,
    rateLimits: { batch: 20 },
    logger: createLogger({ level: 'warn', write: (line) => void lines.push(line) }),
    ...extra,
  });
  engines.push(engine);
  const warnings = (): Array<{ msg: string; code?: string }> =>
    lines.map((l) => JSON.parse(l) as { msg: string; code?: string }).filter((l) => l.code === 'budget-key-shared');
  return { engine, lines, warnings };
}

/** Resolves once `sql` (on `db`, with `account`) finds a row, or false after `ms`. */
async function found(db: string, sql: string, account: string, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await new Promise((r) => setTimeout(r, 25))) {
    const rows = await withClient(db, async (c) => (await c.query(sql, [account]).catch(() => ({ rows: [] }))).rows);
    if (rows.length > 0) return true;
  }
  return false;
}

/**
 * Resolves once the calls of a run under `account` have started on the budget `db` (its row is
 * paced), and its key's record is there (given a second more: without the record, the check has nothing to find).
 */
async function keyInUse(db: string, account: string): Promise<void> {
  if (!(await found(db, `SELECT 1 FROM dq_throttle WHERE account = $1 AND seq > 0`, account, 10_000))) throw new Error(`no call under ${account}`);
  await found(db, `SELECT 1 FROM dq_throttle_keys WHERE account = $1`, account, 1_000);
}

/**
 * Runs `first` (with `firstKey` under `firstAccount`) and, once its calls have started, `second`
 * while the first still runs; the log lines of both.
 */
async function together(db: string, first: [string, string | undefined], second: [string, string | undefined]) {
  const a = start(db, ...first);
  const running = a.engine.process(addresses(30));
  await keyInUse(db, first[1] ?? a.engine.report().budget!.account);
  const b = start(db, ...second);
  const answered = await b.engine.process(addresses(3, 1000));
  expect(answered.map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
  // The key's records while both work (each run removes its own when it ends).
  const records = await withClient(db, async (c) => (await c.query<{ t: string }>(`SELECT t::text AS t FROM dq_throttle_keys AS t`)).rows.map((r) => r.t));
  let firstDone = false;
  void running.then(() => (firstDone = true));
  await Promise.resolve();
  // The first was still at work when the second started and ended.
  expect(firstDone).toBe(false);
  await running;
  await b.engine.close();
  await a.engine.close();
  return { a, b, records };
}

/** The scripted platform, answering every address with class A after `delayMs`. */
async function slowPlatform(delayMs = 60): Promise<void> {
  platform = await startScriptedPlatform((req) => ({ ...batchAnswer(req, 'A'), delayMs }));
}

describe('one API key under two accounts of a shared budget', () => {
  it('the process started second, without --account while another uses the key under --account prod, warns once naming prod and what to do, and keeps its own row', async () => {
    await slowPlatform();
    const db = await server.createDatabase();
    const { a, b, records } = await together(db, [KEY, 'prod'], [KEY, undefined]);
    const warnings = b.warnings();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain('prod');
    expect(warnings[0]!.msg).toContain('give every process using this key the same --account (or none, on the same base URL)');
    expect(warnings[0]!.msg).not.toContain(KEY);
    // The first saw no other account when it started, and nothing else was logged.
    expect(a.lines).toEqual([]);
    expect(b.lines).toHaveLength(1);
    // No silent merging: each keeps its own row of the budget.
    const own = b.engine.report().budget!.account;
    expect(own).toMatch(/^key-[0-9a-f]{16}$/);
    const rows = await withClient(db, async (c) => (await c.query<{ account: string }>(`SELECT DISTINCT account FROM dq_throttle WHERE seq > 0`)).rows);
    expect(rows.map((r) => r.account).sort()).toEqual([own, 'prod'].sort());
    // The key's record holds a digest: neither the key nor a text containing it.
    const dump = records.join('\n');
    expect(dump).toContain('prod');
    expect(dump).not.toContain(KEY);
  }, 60_000);

  it('the same key under the same --account warns of nothing', async () => {
    await slowPlatform();
    const db = await server.createDatabase();
    const { a, b } = await together(db, [KEY, 'prod'], [KEY, 'prod']);
    expect(a.lines).toEqual([]);
    expect(b.lines).toEqual([]);
  }, 60_000);

  it('another key under another account warns of nothing', async () => {
    await slowPlatform();
    const db = await server.createDatabase();
    const { a, b } = await together(db, [KEY, 'prod'], [OTHER_KEY, undefined]);
    expect(a.lines).toEqual([]);
    expect(b.lines).toEqual([]);
  }, 60_000);

  it('a key last used under another account more than 10 s ago warns of nothing: that run is over', async () => {
    await slowPlatform(1);
    const db = await server.createDatabase();
    const a = start(db, KEY, 'prod');
    await a.engine.process(addresses(3));
    await a.engine.close();
    await withClient(db, (c) => c.query(`UPDATE dq_throttle_keys SET seen_us = seen_us - 11000000`));
    const b = start(db, KEY, undefined);
    await b.engine.process(addresses(3, 1000));
    await b.engine.close();
    expect(b.lines).toEqual([]);
  }, 60_000);

  it('a user without CREATE, on a database whose budget table exists, runs as before: no warning, no error, no new table', async () => {
    await slowPlatform();
    const db = await server.createDatabase();
    const role = `etl_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(8).toString('hex');
    await withClient(db, async (c) => {
      await ensureThrottleTable(c);
      // The budget's table alone, as a database the budget was used on before the key table existed.
      await c.query(`DROP TABLE dq_throttle_keys`);
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      await c.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      await c.query(`GRANT SELECT, INSERT, UPDATE ON dq_throttle TO ${role}`);
    });
    const url = new URL(db);
    url.username = role;
    url.password = password;
    const asRole = url.toString();
    // The database refuses this user a table of its own.
    await expect(withClient(asRole, (c) => c.query('CREATE TABLE probe (x int)'))).rejects.toMatchObject({ code: '42501' });

    const a = start(asRole, KEY, 'prod');
    const running = a.engine.process(addresses(30));
    // Its calls have started: its row is paced.
    expect(await found(db, `SELECT 1 FROM dq_throttle WHERE account = $1 AND seq > 0`, 'prod', 10_000)).toBe(true);
    const b = start(asRole, KEY, undefined);
    const answered = await b.engine.process(addresses(3, 1000));
    expect((await running).every((r) => r.status === 'accepted')).toBe(true);
    expect(answered.every((r) => r.status === 'accepted')).toBe(true);
    await b.engine.close();
    await a.engine.close();
    expect(a.lines).toEqual([]);
    expect(b.lines).toEqual([]);
    const present = await withClient(db, async (c) => (await c.query<{ t: string | null }>(`SELECT to_regclass('dq_throttle_keys')::text AS t`)).rows[0]?.t);
    expect(present).toBeNull();
  }, 60_000);
});

/** The accounts of `db`'s key records, sorted. */
async function keyAccounts(db: string): Promise<string[]> {
  return withClient(db, async (c) => (await c.query<{ account: string }>(`SELECT account FROM dq_throttle_keys ORDER BY account`)).rows.map((r) => r.account));
}

describe("the key's records", () => {
  it('two runs under two accounts with one key, started at the same moment: one of them warns', async () => {
    await slowPlatform(1);
    const db = await server.createDatabase();
    await withClient(db, (c) => ensureThrottleTable(c));
    const a = start(db, KEY, 'prod');
    const b = start(db, KEY, 'staging');
    // A session writing both runs' records, uncommitted, holds the two checks until it ends: they
    // then go on together, as two runs starting within the same millisecond do.
    await withClient(db, async (c) => {
      await c.query('BEGIN');
      await c.query(`INSERT INTO dq_throttle_keys VALUES ($1, 'prod', 0), ($1, 'staging', 0)`, [keyIdOf(KEY)]);
      const ready = Promise.all([a.engine.ready(), b.engine.ready()]);
      // Both checks wait for a lock (with the fix, the second waits for the first's).
      const waiting = `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' HAVING count(*) >= 2`;
      expect(await found(db, waiting, new URL(db).pathname.slice(1), 10_000)).toBe(true);
      await c.query('ROLLBACK');
      await ready;
    });
    const warnings = [...a.warnings(), ...b.warnings()];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/another account of the shared rate budget, (prod|staging), while this run uses (staging|prod)/);
    expect(await keyAccounts(db)).toEqual(['prod', 'staging']);
  }, 20_000);

  it('a run removes records no process wrote for a day, waiting on no other session, and its own when it ends', async () => {
    await slowPlatform(1);
    const db = await server.createDatabase();
    const day = 24 * 3600 * 1_000_000;
    await withClient(db, async (c) => {
      await ensureThrottleTable(c);
      const now = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`;
      await c.query(`INSERT INTO dq_throttle_keys VALUES ('00aa', 'old', ${now} - 2 * ${day}), ('00bb', 'held', ${now} - 2 * ${day}),
        ('00cc', 'ahead', ${now} + 2 * ${day}), ('00dd', 'recent', ${now} - ${day / 2})`);
    });
    const a = start(db, KEY, 'prod');
    await withClient(db, async (holder) => {
      // Another session holds one stale record: the run does not wait for it, and leaves it.
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM dq_throttle_keys WHERE account = 'held' FOR UPDATE`);
      const began = Date.now();
      await a.engine.ready();
      expect(Date.now() - began).toBeLessThan(5_000);
      expect(await keyAccounts(db)).toEqual(['held', 'prod', 'recent']);
      expect((await a.engine.process(addresses(3))).map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
      await a.engine.close();
      await holder.query('ROLLBACK');
    });
    // The run ended: its record is gone, the others' are as they were.
    expect(await keyAccounts(db)).toEqual(['held', 'recent']);
    expect(a.lines).toEqual([]);
  }, 20_000);

  it("a run that ends while another process of its key and account still works leaves that process's record", async () => {
    await slowPlatform();
    const db = await server.createDatabase();
    const a = start(db, KEY, 'prod');
    const running = a.engine.process(addresses(30));
    await keyInUse(db, 'prod');
    // Another process: its calls are made in a worker thread, with a budget of its own.
    const b = start(db, KEY, 'prod', { threads: 1 });
    expect((await b.engine.process(addresses(3, 1000))).map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
    await b.engine.close();
    let firstDone = false;
    void running.then(() => (firstDone = true));
    await Promise.resolve();
    expect(firstDone).toBe(false);
    expect(await keyAccounts(db)).toEqual(['prod']);
    await running;
    await a.engine.close();
  }, 20_000);
});

// The warning as a user sees it: two dq-csv processes with the same key, one given --account, on
// stderr of the one started second.
const DQ_CSV = fileURLToPath(new URL('../../csv-processor/dist/cli.js', import.meta.url));
const sandbox = useSandbox();
const dir = useTempDir('dq-budget-split-');

describe('dq-csv: one API key under two accounts', () => {
  it('the run started second, without --account, prints one warning on stderr naming the account prod', async () => {
    const db = await server.createDatabase();
    const env = sandbox.env();
    const args = async (seed: number, ...more: string[]): Promise<string[]> => {
      const input = join(dir, `in-${seed}.csv`);
      const rows = Array.from({ length: 20 }, (_, i) => `Friedrichstraße ${seed * 100 + i};10117;Berlin;DE`);
      await writeFile(input, ['strasse;plz;ort;land', ...rows, ''].join('\n'));
      return sampleArgs(input, join(dir, `out-${seed}.csv`), '--budget', db, ...more);
    };
    // The first paces 20 rows at 4 calls a second: it is still at work when the second starts.
    const first = runNode(DQ_CSV, await args(1, '--account', 'prod', '--rate-limit', '4', '--batch-size', '1', '--concurrency', '1'), env);
    await keyInUse(db, 'prod');
    const second = await runNode(DQ_CSV, await args(2), env);
    const firstExit = await first;
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    expect(firstExit.code, firstExit.stderr.slice(-2000)).toBe(0);
    expect(second.endedAt).toBeLessThan(firstExit.endedAt);
    const warnings = second.stderr.split('\n').filter((l) => l.includes('budget-key-shared'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('another account of the shared rate budget, prod,');
    expect(warnings[0]).toContain('give every process using this key the same --account (or none, on the same base URL)');
    expect(second.stderr + second.stdout).not.toContain(env['DQ_API_KEY']);
    expect(firstExit.stderr).not.toContain('budget-key-shared');
  }, 90_000);
});
