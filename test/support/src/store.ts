import { join } from 'node:path';
import { open } from 'lmdb';

/** Milliseconds in a day. */
export const DAY_MS = 86_400_000;

/** One entry of the embedded result store as it keeps it: check time (ms) and the answer. */
interface Entry {
  t: number;
  r: { checkedAt?: string } & Record<string, unknown>;
}

/**
 * Makes every entry of the embedded result store in folder `dir` look checked `ageDays(i)` days ago
 * (i: the entry's position), as a store filled that long ago would be: its check time and the
 * answer's `checkedAt`. Returns how many entries got each age. No connector may have it open.
 */
export async function ageStoreEntries(dir: string, ageDays: (i: number) => number): Promise<Map<number, number>> {
  // The store's own options (packages/core/src/store/lmdb-store.ts): its entries decode only with them.
  const db = open<Entry, string>({ path: join(dir, 'results.mdb'), compression: false, noSync: true, sharedStructuresKey: Symbol.for('structures') });
  const counts = new Map<number, number>();
  try {
    // The answers only: the store also keeps a record of its own (a value that is no entry).
    const entries = [...db.getRange()].filter(({ value }) => typeof value === 'object' && value !== null).map(({ key, value }) => [key, value] as const);
    const now = Date.now();
    await db.transaction(() => {
      entries.forEach(([key, value], i) => {
        const days = ageDays(i);
        const t = now - days * DAY_MS;
        void db.put(key, { t, r: { ...value.r, checkedAt: new Date(t).toISOString() } });
        counts.set(days, (counts.get(days) ?? 0) + 1);
      });
    });
  } finally {
    await db.close();
  }
  return counts;
}
