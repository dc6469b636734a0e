import { LRUCache } from 'lru-cache';
import type { CachedResult, ResultCache } from './types.js';

/** Options of {@link createMemoryCache}. */
export interface MemoryCacheOptions {
  /** Most entries kept; the least recently used one is evicted beyond it. Default 100 000. */
  maxEntries?: number;
}

/** The engine's default result cache: in memory, bounded, least recently used evicted first (lru-cache). */
export function createMemoryCache({ maxEntries = 100_000 }: MemoryCacheOptions = {}): ResultCache {
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new RangeError(`createMemoryCache: maxEntries must be a positive integer, got ${maxEntries}`);
  }
  const entries = new LRUCache<string, CachedResult>({ max: maxEntries });
  return {
    get: (key) => entries.get(key),
    set: (key, value) => void entries.set(key, value),
  };
}
