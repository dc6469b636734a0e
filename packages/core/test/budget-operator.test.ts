import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgThrottle } from '@dq/core/throttle-pg';
import type { PgThrottle } from '@dq/core/throttle-pg';
import { startPostgres, type TestPostgres } from '@dq/test-support/pg';

// The shared rate budget (README, "One rate budget per account") as operators get it wrong: the
// processes of one account started with different --rate-limit values, on a real PostgreSQL.

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

/** Keeps `callers` acquiring batch slots from `t` until `until` (Date.now), noting when each was granted. */
async function saturate(t: PgThrottle, until: number, times: number[], callers = 8): Promise<void> {
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (Date.now() < until) {
        const ticket = await t.acquire('batch');
        times.push(Date.now());
        t.ended?.('batch', ticket as number);
      }
    }),
  );
}

/** Most grants in any one second. */
function busiestSecond(times: number[]): number {
  const all = [...times].sort((x, y) => x - y);
  let most = 0;
  for (let i = 0, j = 0; i < all.length; i++) {
    while (all[i]! - all[j]! >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('processes of one account with different --rate-limit values', () => {
  it('a process given a lower --rate-limit caps its own calls, not the account: the other keeps the rest of the limit, and no second holds more than the highest', async () => {
    const db = await server.createDatabase();
    const full = await createPgThrottle({ connectionString: db, account: 'mixed', limits: { batch: 50 } });
    const low = await createPgThrottle({ connectionString: db, account: 'mixed', limits: { batch: 10 } });
    try {
      const a: number[] = [];
      const b: number[] = [];
      const start = Date.now();
      await Promise.all([saturate(full, start + 3_000, a), saturate(low, start + 3_000, b)]);
      // Together they had 3 s of the account's 50/s (150 slots); the low one about its 10/s (its callers first ask before it knows the account is claimed).
      expect(busiestSecond([...a, ...b])).toBeLessThanOrEqual(50);
      expect(b.length).toBeLessThanOrEqual(55);
      expect(a.length + b.length).toBeGreaterThanOrEqual(0.8 * 150);
    } finally {
      await full.close();
      await low.close();
    }
  });
});
