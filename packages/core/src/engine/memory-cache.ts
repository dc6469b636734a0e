import type { CachedResult, ResultCache } from './types.js';

/** Options of {@link createMemoryCache}. */
export interface MemoryCacheOptions {
  /** Most entries kept; the least recently used one is evicted beyond it. Default 100 000. */
  maxEntries?: number;
}

/**
 * The engine's default result cache: in memory, bounded, least recently used evicted first.
 * A `Map` keeps insertion order, so re-inserting on every hit makes its first key the LRU one.
 */
export function createMemoryCache({ maxEntries = 100_000 }: MemoryCacheOptions = {}): ResultCache {
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new RangeError(`createMemoryCache: maxEntries must be a positive integer, got ${maxEntries}`);
  }
  const entries = new Map<string, CachedResult>();
  return {
    get(key) {
      const value = entries.get(key);
      if (value !== undefined) {
        entries.delete(key);
        entries.set(key, value);
      }
      return value;
    },
    set(key, value) {
      entries.delete(key);
      entries.set(key, value);
      if (entries.size > maxEntries) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
    },
  };
}
