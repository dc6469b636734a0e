import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, createSilentLogger, exitCodeForError } from '@dq/core';
import type { Engine, EngineConfig } from '@dq/core';
import { openStore } from '@dq/core/store';
import { createPgThrottle } from '@dq/core/throttle-pg';
import type { ResultStore } from '@dq/core/store';
import { startPostgres, withClient, type TestPostgres } from '@dq/test-support/pg';
import { useSandbox } from '@dq/test-support/use';
import { addresses } from './engine-support.js';

// The account's shared Postgres store and budget (README, "The result store" and "One rate budget
// per account") against what an operator or a database can do to them while runs use them: rows
// edited by hand, tables locked by another session, a role without the grants, a newer layout.
// Every run goes to the sandbox over real HTTP; its `billable` counter is what the account pays.

const API_KEY = 'dq-test-key-a';
// Accounts c and d: as strict as the platform, 10 batch calls in any sliding second.
const STRICT = ['dq-sandbox-key-c', 'dq-sandbox-key-d'] as const;
const sandbox = useSandbox({
  accounts: [
    { id: 'a', apiKeys: [API_KEY], rateLimits: { batch: 0 } },
    { id: 'c', apiKeys: [STRICT[0]], rateLimits: { batch: 10 } },
    { id: 'd', apiKeys: [STRICT[1]], rateLimits: { batch: 10 } },
  ],
});
const paid = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);
const refused = (): number => sandbox.stats().requests['batch']?.byStatus['429'] ?? 0;

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function engineOf(extra: Partial<EngineConfig>, apiKey = API_KEY): Engine {
  const engine = createEngine({
    mode: 'address',
    baseUrl: sandbox.url,
    apiKey,
    rateLimits: { batch: 0 },
    threads: 0,
    concurrency: 4,
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 },
    logger: createSilentLogger(),
    ...extra,
  });
  cleanups.push(() => engine.close());
  return engine;
}

async function store(url: string, maxAgeMs?: number): Promise<ResultStore> {
  const s = (await openStore(url, maxAgeMs === undefined ? {} : { maxAgeMs }))!;
  cleanups.push(() => s.close());
  return s;
}

/** What `p` settled with: its value, its error, or `timeout` when it took longer than `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<{ value?: T; error?: unknown; timedOut?: true }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ timedOut: true }>((resolve) => (timer = setTimeout(() => resolve({ timedOut: true }), ms)));
  try {
    return await Promise.race([
      p.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const withQueryTimeout = (url: string, ms: number): string => `${url}${url.includes('?') ? '&' : '?'}query_timeout=${ms}`;

describe('the shared result store, edited or locked by hand', () => {
  it('an entry whose answer was edited into another shape (JSON null, a string, an object without a status) is never used: that input is bought again and its entry replaced', async () => {
    const db = await server.createDatabase();
    const records = addresses(4);
    const bought = await engineOf({ resultStore: await store(db) }).process(records);
    expect(paid()).toBeGreaterThanOrEqual(4);
    await withClient(db, async (c) => {
      const { rows } = await c.query<{ key: string }>('SELECT key FROM dq_store.results ORDER BY key');
      expect(rows).toHaveLength(4);
      const edits = [`'null'`, `'"accepted"'`, `'{"resultClass":"A"}'`];
      for (const [i, edit] of edits.entries()) await c.query(`UPDATE dq_store.results SET result = ${edit}::json WHERE key = $1`, [rows[i]!.key]);
    });
    const before = paid();
    const again = engineOf({ resultStore: await store(db) });
    const results = await again.process(records);
    // The sandbox's own answers, not the edited rows (nor a crash on them).
    expect(results.map((r) => [r.status, r.resultClass])).toEqual(bought.map((r) => [r.status, r.resultClass]));
    expect(results.filter((r) => r.source === 'api')).toHaveLength(3);
    expect(paid() - before).toBe(3);
    // Replaced by the answers just bought: the next run pays nothing.
    const third = engineOf({ resultStore: await store(db) });
    expect((await third.process(records)).every((r) => r.source === 'store')).toBe(true);
    expect(paid() - before).toBe(3);
  });

  it('an entry whose check time was set in the future does not stay fresh for ever: it is bought again and replaced', async () => {
    const db = await server.createDatabase();
    const records = addresses(2, 10);
    await engineOf({ resultStore: await store(db) }).process(records);
    await withClient(db, (c) => c.query(`UPDATE dq_store.results SET checked_at = now() + interval '50 years'`));
    const before = paid();
    const results = await engineOf({ resultStore: await store(db) }).process(records);
    expect(results.map((r) => r.source)).toEqual(['api', 'api']);
    expect(paid() - before).toBe(2);
    const { rows } = await withClient(db, (c) =>
      c.query<{ future: string }>(`SELECT count(*) FILTER (WHERE checked_at > now() + interval '1 day') AS future FROM dq_store.results`),
    );
    expect(rows[0]!.future).toBe('0');
  });

  it('a store whose layout a newer version made is refused before any call, naming both versions', async () => {
    const db = await server.createDatabase();
    await (await store(db)).close();
    await withClient(db, (c) => c.query('UPDATE dq_store.schema_version SET version = 3'));
    const error = await openStore(db).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'usage' });
    expect(exitCodeForError(error)).toBe(2);
    expect((error as Error).message).toMatch(/layout version 3.*2|newer/);
    expect((error as Error).message).not.toContain(new URL(db).password);
  });

  it('a role with SELECT only on the store is refused before any call (no answer bought that could not be kept), naming the grant', async () => {
    const db = await server.createDatabase();
    await (await store(db)).close();
    const role = `ro_${Math.random().toString(36).slice(2, 8)}`;
    await withClient(db, async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw-${role}'`);
      await c.query(`GRANT USAGE ON SCHEMA dq_store TO ${role}`);
      await c.query(`GRANT SELECT ON ALL TABLES IN SCHEMA dq_store TO ${role}`);
    });
    const u = new URL(db);
    u.username = role;
    u.password = `pw-${role}`;
    const before = paid();
    const error = await (async () => engineOf({ resultStore: await store(u.toString()) }).process(addresses(6, 20)))().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'store-permission-denied' });
    expect(exitCodeForError(error)).toBe(2);
    expect((error as Error).message).toMatch(/INSERT, UPDATE/);
    expect((error as Error).message).not.toContain(`pw-${role}`);
    expect(paid() - before).toBe(0);
  });

  it('a store table locked by another session stops the run within its query limit, saying the table is locked and by which session', async () => {
    const db = await server.createDatabase();
    await (await store(db)).close();
    const locker = new pg.Client({ connectionString: db });
    await locker.connect();
    cleanups.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE dq_store.results IN ACCESS EXCLUSIVE MODE');
    const { rows } = await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const e = engineOf({ resultStore: await store(withQueryTimeout(db, 2_000)) });
    const started = Date.now();
    const outcome = await within(e.process(addresses(2, 30)), 20_000);
    await locker.query('ROLLBACK');
    expect(outcome.timedOut).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(exitCodeForError(outcome.error)).toBe(75);
    expect((outcome.error as Error).message).toMatch(/dq_store\.results.*locked/);
    expect((outcome.error as Error).message).toContain(`pid ${rows[0]!.pid}`);
  });
});

describe('the shared rate budget, edited or locked by hand', () => {
  const budgeted = (db: string, extra: Partial<EngineConfig> = {}): Engine => engineOf({ budget: db, rateLimits: { batch: 50 }, ...extra });

  it("the account's budget rows deleted while it runs are made again: the run goes on", async () => {
    const db = await server.createDatabase();
    const e = budgeted(db);
    await e.process(addresses(3, 40));
    await withClient(db, (c) => c.query('DELETE FROM dq_throttle'));
    const before = paid();
    const outcome = await within(e.process(addresses(3, 50)), 10_000);
    expect(outcome.timedOut).toBeUndefined();
    expect(outcome.error).toBeUndefined();
    expect(outcome.value?.map((r) => r.source)).toEqual(Array(3).fill('api'));
    expect(paid() - before).toBe(3);
    // Paced by the account's row again, not by none.
    const { rows } = await withClient(db, (c) => c.query<{ n: string }>(`SELECT count(*) AS n FROM dq_throttle WHERE endpoint = 'batch' AND seq > 0`));
    expect(rows[0]!.n).toBe('1');
  });

  it('a budget row set far into the future (by hand, or a clock gone wrong) holds no run for years: it goes on within seconds', async () => {
    const db = await server.createDatabase();
    const e = budgeted(db);
    await e.process(addresses(1, 60));
    await withClient(db, (c) =>
      c.query(
        `UPDATE dq_throttle SET tat_us = (extract(epoch FROM now() + interval '1 year') * 1e6)::bigint,
           lanes = array_fill((extract(epoch FROM now() + interval '1 year') * 1e6)::bigint, ARRAY[cardinality(lanes)])
         WHERE lanes IS NOT NULL`,
      ),
    );
    const outcome = await within(e.process(addresses(3, 61)), 10_000);
    expect(outcome.timedOut).toBeUndefined();
    expect(outcome.error).toBeUndefined();
  });

  it('a budget row whose rate factor was set below 0 (and its time into the future) does not let the account send faster than its limit', async () => {
    const db = await server.createDatabase();
    const e = engineOf({ budget: db, rateLimits: { batch: 10 }, concurrency: 8 }, STRICT[0]);
    await e.process(addresses(1, 70));
    await withClient(db, (c) => c.query(`UPDATE dq_throttle SET factor = -1, factor_at_us = (extract(epoch FROM now() + interval '1 year') * 1e6)::bigint`));
    const [before, refusedBefore] = [paid(), refused()];
    const started = Date.now();
    const outcome = await within(e.process(addresses(24, 71)), 20_000);
    expect(outcome.error).toBeUndefined();
    expect(paid() - before).toBe(24);
    expect(refused() - refusedBefore).toBe(0);
    // 24 calls at 10 in any second: the last goes 2 s after the first at the earliest.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
  });

  it("a 429 still slows the account after its row's time of the last slowdown was set into the future", async () => {
    const db = await server.createDatabase();
    const throttle = await createPgThrottle({ connectionString: db, account: 'acct-future', limits: { batch: 10 } });
    cleanups.push(() => throttle.close());
    await throttle.acquire('batch');
    await withClient(db, (c) => c.query(`UPDATE dq_throttle SET factor_at_us = (extract(epoch FROM now() + interval '1 year') * 1e6)::bigint`));
    throttle.backoff('batch', 0);
    await throttle.close();
    const { rows } = await withClient(db, (c) => c.query<{ factor: number }>(`SELECT factor FROM dq_throttle WHERE endpoint = 'batch'`));
    expect(rows[0]!.factor).toBe(0.5);
  });

  it('a budget table locked by another session stops the run within its query limit, saying the table is locked and by which session', async () => {
    const db = await server.createDatabase();
    const e = budgeted(withQueryTimeout(db, 2_000));
    await e.process(addresses(1, 80));
    const locker = new pg.Client({ connectionString: db });
    await locker.connect();
    cleanups.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE dq_throttle IN ACCESS EXCLUSIVE MODE');
    const { rows } = await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const started = Date.now();
    const outcome = await within(e.process(addresses(1, 81)), 20_000);
    await locker.query('ROLLBACK');
    expect(outcome.timedOut).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(exitCodeForError(outcome.error)).toBe(75);
    expect((outcome.error as Error).message).toMatch(/dq_throttle.*locked/);
    expect((outcome.error as Error).message).toContain(`pid ${rows[0]!.pid}`);
  });

  it('a budget table locked by another session before the run opens the budget: the stop names the lock too', async () => {
    const db = await server.createDatabase();
    await budgeted(db).process(addresses(1, 89));
    const locker = new pg.Client({ connectionString: db });
    await locker.connect();
    cleanups.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE dq_throttle IN ACCESS EXCLUSIVE MODE');
    const outcome = await within(budgeted(withQueryTimeout(db, 1_000)).process(addresses(1, 90)), 20_000);
    await locker.query('ROLLBACK');
    expect(exitCodeForError(outcome.error)).toBe(75);
    expect((outcome.error as Error).message).toMatch(/dq_throttle.*locked/);
  });

  it('a database whose sessions are read-only (default_transaction_read_only) stops the run before any call: exit 2 for the store and for the budget, each naming why', async () => {
    const db = await server.createDatabase();
    await (await store(db)).close();
    await budgeted(db).process(addresses(1, 95));
    await withClient(db, (c) => c.query(`ALTER DATABASE ${new URL(db).pathname.slice(1)} SET default_transaction_read_only = on`));
    const before = paid();
    const viaStore = await (async () => engineOf({ resultStore: await store(db) }).process(addresses(2, 96)))().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(viaStore).toMatchObject({ code: 'store-permission-denied' });
    expect((viaStore as Error).message).toMatch(/read-only \(default_transaction_read_only is on\)/);
    const viaBudget = await budgeted(db)
      .process(addresses(2, 98))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(viaBudget).toMatchObject({ code: 'budget-db-config' });
    expect((viaBudget as Error).message).toMatch(/read-only transaction/);
    expect([exitCodeForError(viaStore), exitCodeForError(viaBudget)]).toEqual([2, 2]);
    expect(paid() - before).toBe(0);
  });

  it('two accounts on one budget database each get their own limit: run side by side, neither waits for the other, neither gets a 429', async () => {
    const db = await server.createDatabase();
    const [c, d] = STRICT.map((key) => engineOf({ budget: db, rateLimits: { batch: 10 }, concurrency: 8 }, key));
    const refusedBefore = refused();
    const started = Date.now();
    await Promise.all([c!.process(addresses(20, 200)), d!.process(addresses(20, 300))]);
    const took = Date.now() - started;
    expect(refused() - refusedBefore).toBe(0);
    // Sharing one limit, the 40 calls would take 4 s; each account's 20 take 2 s.
    expect(took).toBeLessThan(3_500);
    const { rows } = await withClient(db, (cl) => cl.query<{ seq: string }>(`SELECT seq::text FROM dq_throttle WHERE endpoint = 'batch' ORDER BY account`));
    expect(rows.map((r) => r.seq)).toEqual(['20', '20']);
  });
});

describe('the database restarting under a run', () => {
  /**
   * A run of 150 inputs against the store and budget in `db`, `interrupt`ed once 40 calls were paid;
   * then the rerun. It stops with exit 75 or finishes, without a hang; the rerun takes every answer the
   * store kept and buys only the others; at most the calls in flight (4) were bought and not kept.
   */
  async function interruptedRun(db: string, interrupt: () => Promise<void>): Promise<unknown> {
    const records = addresses(150, 400);
    const e = engineOf({ resultStore: await store(db), budget: db, rateLimits: { batch: 100 } });
    const before = paid();
    const running = within(e.process(records), 60_000);
    while (paid() - before < 40) await new Promise((r) => setTimeout(r, 5));
    await interrupt();
    const outcome = await running;
    expect(outcome.timedOut).toBeUndefined();
    const firstRun = paid() - before;
    if (outcome.error !== undefined) expect(exitCodeForError(outcome.error)).toBe(75);
    for (let i = 0; ; i++) {
      const up = await withClient(db, (c) => c.query('SELECT 1')).then(
        () => true,
        () => false,
      );
      if (up) break;
      if (i > 100) throw new Error('the server did not come back');
      await new Promise((r) => setTimeout(r, 100));
    }
    const kept = Number((await withClient(db, (c) => c.query<{ n: string }>('SELECT count(*) AS n FROM dq_store.results'))).rows[0]!.n);
    const rerun = engineOf({ resultStore: await store(db), budget: db, rateLimits: { batch: 100 } });
    const again = await rerun.process(records);
    expect(again).toHaveLength(150);
    expect(again.filter((r) => r.source === 'store')).toHaveLength(kept);
    expect(paid() - before - firstRun).toBe(150 - kept);
    expect(firstRun - kept).toBeLessThanOrEqual(4);
    return outcome.error;
  }

  it("every session of the store's and budget's database terminated mid-run (pg_terminate_backend)", async () => {
    const db = await server.createDatabase();
    const stopped = await interruptedRun(db, async () => {
      await withClient(db, (c) =>
        c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()'),
      );
    });
    expect(String((stopped as Error | undefined)?.message)).not.toMatch(/bug/i);
  });

  it('the server crashing and restarting mid-run (a backend killed -9, commits durable as by default)', async () => {
    // Its own server: the shared one acknowledges commits before they are durable (fast tests), and a crash loses those.
    const durable = await startPostgres({ settings: { synchronous_commit: 'on' } });
    cleanups.push(() => durable.stop());
    const db = await durable.createDatabase();
    await interruptedRun(db, async () => {
      const victim = new pg.Client({ connectionString: db });
      await victim.connect();
      victim.on('error', () => undefined);
      const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // One backend killed: the postmaster ends every session, recovers and accepts connections again.
      process.kill(pid, 'SIGKILL');
    });
  });
});
