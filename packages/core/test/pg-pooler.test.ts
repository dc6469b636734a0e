import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '@dq/core/store';
import type { ResultStore } from '@dq/core/store';
import { createPgThrottle } from '@dq/core/throttle-pg';
import { busiestSecond, saturate } from './throttle-grants.js';
import { startPostgres, withClient, type TestPostgres } from '@dq/test-support/pg';
import { pgbouncerBinary, startPgBouncer, type TestPgBouncer } from '@dq/test-support/pgbouncer';

// The shared result store (README "The result store") and the shared rate budget (README "One rate
// budget per account") reached through PgBouncer in transaction pooling mode, as managed databases
// put it in front: each of their statements and transactions stands alone, so both work through it.
// A real PostgreSQL behind a real PgBouncer (Debian package pgbouncer).

const installed = pgbouncerBinary() !== undefined;
if (!installed) console.warn('pg-pooler.test.ts skipped: the pgbouncer binary is not installed (Debian: apt-get install pgbouncer)');

let server: TestPostgres;
let bouncer: TestPgBouncer;
let db: string;
beforeAll(async () => {
  if (!installed) return;
  server = await startPostgres();
  db = await server.createDatabase();
  // Two server connections for every client: a client's transactions land on either.
  bouncer = await startPgBouncer({ serverUrl: db, poolMode: 'transaction', poolSize: 2 });
}, 120_000);
afterAll(async () => {
  await bouncer?.stop();
  await server?.stop();
});

describe.skipIf(!installed)('through PgBouncer in transaction pooling mode', () => {
  it('the result store: processes opening it together on a fresh database make it once, and each reads what the others wrote', async () => {
    const url = bouncer.through(db);
    const stores = (await Promise.all(Array.from({ length: 4 }, () => openStore(url)))) as ResultStore[];
    try {
      const checkedAt = new Date().toISOString();
      await Promise.all(
        stores.map(async (store, s) => {
          for (let i = 0; i < 25; i++) await store.set(`k-${s}-${i}`, { status: 'accepted', resultClass: 'A', requestId: `r-${s}-${i}`, checkedAt });
        }),
      );
      const keys = stores.flatMap((_, s) => Array.from({ length: 25 }, (__, i) => `k-${s}-${i}`));
      for (const store of stores) {
        const found = await store.getMany(keys);
        expect(found.size).toBe(100);
        expect(found.get('k-3-24')).toMatchObject({ status: 'accepted', requestId: 'r-3-24' });
      }
      expect((await stores[0]!.info()).entries).toBe(100);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    // Straight on the server: the rows are there, and no session was left holding a lock.
    await withClient(db, async (c) => {
      expect((await c.query<{ n: number }>('SELECT count(*)::int AS n FROM dq_store.results')).rows[0]?.n).toBe(100);
      expect((await c.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory'`)).rowCount).toBe(0);
    });
  });

  it("the shared budget: two processes' throttles keep the account's limit between them, and use most of it", async () => {
    const url = bouncer.through(db);
    const a = await createPgThrottle({ connectionString: url, account: 'pooled', limits: { batch: 40 } });
    const b = await createPgThrottle({ connectionString: url, account: 'pooled', limits: { batch: 40 } });
    try {
      const granted: number[] = [];
      const start = Date.now();
      await Promise.all([saturate(a, start + 3_000, granted), saturate(b, start + 3_000, granted)]);
      // 3 s of 40/s between them: never more than 40 in a second, and no slot lost to the pooler.
      expect(busiestSecond(granted)).toBeLessThanOrEqual(40);
      expect(granted.length).toBeGreaterThanOrEqual(0.8 * 120);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
