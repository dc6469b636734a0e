import { createServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

// Defaults no other test leaves out while asserting their effect: --workers (4 range workers in
// one process), --batch-size (1000 rows per page: one transaction each), --concurrency (32 calls
// in flight), --pages-per-claim (10 pages per claimed key range) and --max-failed (0); and the wait
// for a row lock (5 s with the default query timeout, README "A row another session holds locked")
// and for a new connection (15 s, README "Losing the database connection"); --read-ahead (0: the
// next page is not validated while one is written). --pages-per-claim 1
// makes a key range one page, so 4,000 rows are four ranges, one for each of the default workers;
// the sandbox answers 20 ms late so that no worker finishes its range before the others claim.
const ROWS = 4_000;

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
  env.sandbox.setFaults({ batch: { latencyMs: 20 } });
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg cleanse without --workers, --batch-size and --concurrency', () => {
  it('runs 4 range workers, writes each page of 1000 rows in one transaction, and keeps 32 calls in flight', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, ROWS, 41);
    env.sandbox.resetStats();
    const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'defaults', '--pages-per-claim', '1', '--store', 'off']));
    expect(result.code, result.stderr).toBe(0);
    expect(summaryOf(result)).toMatchObject({ rows: ROWS });
    // Four pages at once want far more than 32 calls: the default --concurrency caps them.
    expect(env.sandbox.stats().concurrent['batch']?.max).toBe(32);

    await withClient(db, async (c) => {
      const workers = await c.query<{ worker: string; n: number }>(
        `SELECT worker, count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'defaults' GROUP BY worker ORDER BY worker`,
      );
      expect(workers.rows.map((r) => r.worker.replace(/^.*\//, ''))).toEqual(['1', '2', '3', '4']);
      expect(workers.rows.map((r) => r.n)).toEqual([1_000, 1_000, 1_000, 1_000]);
      // A page's results are inserted in the page's transaction: rows sharing a transaction id are one page.
      const pages = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'defaults' GROUP BY xmin::text`);
      expect(pages.rows.map((r) => r.n)).toEqual([1_000, 1_000, 1_000, 1_000]);
    });
  }, 60_000);

  it('without --pages-per-claim, a worker claims 10 pages at a time: 2,500 rows in pages of 100 are 3 ranges of 1000 rows', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 2_500, 42);
    const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'claims', '--batch-size', '100', '--store', 'off']));
    expect(result.code, result.stderr).toBe(0);
    await withClient(db, async (c) => {
      const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'claims' GROUP BY worker ORDER BY n`);
      expect(rows.map((r) => r.n)).toEqual([500, 1_000, 1_000]); // one range per worker: the fourth found none left
    });
  }, 60_000);
});

/**
 * The sandbox behind a proxy that answers the calls for one address (its street `marker`) with a
 * 200 whose body breaks the contract's schema: that record ends `unavailable`, the others as usual.
 */
async function breakingProxy(upstream: string, marker: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      if (body.includes(marker)) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"broken":true}');
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)),
      ) as Record<string, string>;
      const answer = await fetch(upstream + (req.url ?? '/'), { method: req.method, headers, ...(body.length > 0 ? { body } : {}) });
      const text = await answer.text();
      res
        .writeHead(answer.status, {
          'content-type': answer.headers.get('content-type') ?? 'application/json',
          'x-service-request-id': answer.headers.get('x-service-request-id') ?? '',
        })
        .end(text);
    })().catch((e: unknown) => res.writeHead(502).end(String(e)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('dq-pg cleanse without --max-failed', () => {
  it('exits 4 when one row of 40 is unavailable (the default share is 0), with every other row done', async () => {
    env.sandbox.setFaults({});
    const db = await env.pg.createDatabase();
    await createCustomers(db, 40, 43);
    await withClient(db, (c) => c.query(`UPDATE customers SET street = 'Kaputtweg', address_line = NULL WHERE id = 17`));
    const proxy = await breakingProxy(env.sandbox.url, 'Kaputtweg');
    try {
      const args = cleanseArgs(db, env.sandbox, ['--run-id', 'one-failed', '--store', 'off']);
      args[args.indexOf('--base-url') + 1] = proxy.url;
      const result = await runCli(args);
      expect(result.code, result.stderr).toBe(4);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(summaryOf(result)).toMatchObject({ rows: 40, exitCode: 4, byStatus: { unavailable: 1 } });
      const unavailable = await withClient(db, (c) =>
        c.query<{ row_key: string }>(`SELECT row_key FROM dq_cleanse.results WHERE run_id = 'one-failed' AND status = 'unavailable'`),
      );
      expect(unavailable.rows).toEqual([{ row_key: '17' }]);
    } finally {
      await proxy.close();
    }
  }, 60_000);
});

/** A new database whose customers table holds 100 rows, and the key of the first row up to `maxId` a cleanse would change. */
async function tableWithChange(seed: number, maxId: number): Promise<{ db: string; key: string }> {
  env.sandbox.setFaults({});
  const db = await env.pg.createDatabase();
  await createCustomers(db, 100, seed);
  return { db, key: await firstChange(db, maxId) };
}

/** The key of the first row of `db`'s customers a cleanse would change among ids up to `maxId`. */
async function firstChange(db: string, maxId: number): Promise<string> {
  const dry = await runCli(cleanseArgs(db, env.sandbox, ['--dry-run', '--store', 'off']));
  expect(dry.code, dry.stderr).toBe(0);
  const keys = dry.stdout
    .split('\n')
    .filter((l) => l.includes('"type":"change"'))
    .map((l) => String((JSON.parse(l) as { key: unknown }).key));
  const key = keys.find((k) => Number(k) <= maxId);
  if (key === undefined) throw new Error(`no row up to id ${maxId} would change`);
  return key;
}

/** Runs `fn` while another session holds a lock on row `key` (an open transaction that updated it). */
async function whileLocked<T>(db: string, key: string, fn: () => Promise<T>): Promise<T> {
  const app = new pg.Client({ connectionString: db });
  await app.connect();
  try {
    await app.query('BEGIN');
    await app.query(`UPDATE customers SET house_number = house_number WHERE id = $1`, [key]);
    return await fn();
  } finally {
    await app.query('ROLLBACK').catch(() => undefined);
    await app.end();
  }
}

describe('dq-pg cleanse with the default query timeout', () => {
  it('waits 5 s for a row another session holds locked, then writes the page without it (a conflict) and ends while the lock is still held', async () => {
    const { db, key } = await tableWithChange(44, 100);
    await whileLocked(db, key, async () => {
      const started = Date.now();
      const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'row-lock', '--store', 'off']));
      const elapsed = Date.now() - started;
      expect(result.code, result.stderr).toBe(0);
      expect(summaryOf(result)).toMatchObject({ rows: 100, conflicts: 1, conflictKeys: [key] });
      expect(result.stderr).toMatch(/rows locked by another session/);
      // It waited the default 5 s for the lock, and no longer: the lock is held until this test ends.
      expect(elapsed).toBeGreaterThanOrEqual(5_000);
      expect(elapsed).toBeLessThan(20_000);
    });
  }, 60_000);
});

describe('dq-pg cleanse against a database that accepts connections and never answers', () => {
  it('gives up on connecting after the default 15 s: exit 75 (db-unreachable), no stack trace, no password', async () => {
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const db = `postgres://etl:s3cret-pw@127.0.0.1:${(silent.address() as AddressInfo).port}/crm`;
      const started = Date.now();
      const result = await runCli(['cleanse', '--db', db, '--table', 'public.customers', '--base-url', env.sandbox.url]);
      const elapsed = Date.now() - started;
      expect(result.code, result.stderr).toBe(75);
      expect(result.stderr).toMatch(/db-unreachable/);
      expect(result.stderr).not.toContain('s3cret-pw');
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(elapsed).toBeGreaterThanOrEqual(15_000);
      expect(elapsed).toBeLessThan(20_000);
    } finally {
      sockets.forEach((s) => s.destroy());
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  }, 40_000);
});

describe('dq-pg cleanse without --read-ahead', () => {
  it('validates no row of the next page while a page is being written', async () => {
    // A row of the first page (ids 1-50) held locked: writing that page takes the 5 s lock wait.
    const { db, key } = await tableWithChange(45, 50);
    await whileLocked(db, key, async () => {
      const calls0 = billable(env.sandbox);
      const { done } = spawnCli(cleanseArgs(db, env.sandbox, ['--run-id', 'no-read-ahead', '--store', 'off', '--workers', '1', '--batch-size', '50']));
      // The first page's calls, then a pause: the page write waits for the lock.
      let seen = 0;
      for (let still = 0; still < 10;) {
        await new Promise((r) => setTimeout(r, 100));
        const now = billable(env.sandbox) - calls0;
        still = now > 0 && now === seen ? still + 1 : 0;
        seen = now;
      }
      expect(seen).toBeLessThanOrEqual(50);
      await new Promise((r) => setTimeout(r, 2_000)); // well inside the 5 s wait
      expect(billable(env.sandbox) - calls0).toBe(seen); // nothing of page 2 was sent meanwhile
      const result = await done;
      expect(result.code, result.stderr).toBe(0);
      expect(summaryOf(result)).toMatchObject({ rows: 100, conflicts: 1 });
      expect(billable(env.sandbox) - calls0).toBeGreaterThan(seen);
    });
  }, 60_000);
});
