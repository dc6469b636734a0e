import type { CachedResult, ResultCache } from './types.js';

/** Options of {@link createMemoryCache}. */
export interface MemoryCacheOptions {
  /** Most entries kept; the least recently used one is evicted beyond it. Default 100 000. */
  maxEntries?: number;
}

/**
 * The engine's default result cache: in memory, bounded, least recently used evicted first. A `Map`
 * keeps insertion order, so its first key is the one to evict; a hit moves its entry to the back
 * only when the entry has drifted into the older half, so a run of hits on a warm set costs a
 * lookup each rather than a delete and an insert (entries in the newer half are not evicted next
 * anyway).
 */
export function createMemoryCache({ maxEntries = 100_000 }: MemoryCacheOptions = {}): ResultCache {
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new RangeError(`createMemoryCache: maxEntries must be a positive integer, got ${maxEntries}`);
  }
  const entries = new Map<string, { value: CachedResult; stamp: number }>();
  /** Insertions so far; an entry's `stamp` is this count when it was (re)inserted. */
  let clock = 0;
  const insert = (key: string, value: CachedResult): void => {
    entries.delete(key);
    entries.set(key, { value, stamp: ++clock });
    if (entries.size > maxEntries) {
      const oldest = entries.keys().next();
      if (!oldest.done) entries.delete(oldest.value);
    }
  };
  return {
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (clock - entry.stamp >= maxEntries / 2) insert(key, entry.value);
      return entry.value;
    },
    set: insert,
  };
}
