import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgThrottle } from '@dq/core/throttle-pg';
import { busiestSecond, saturate } from './throttle-grants.js';
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
