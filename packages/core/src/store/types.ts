import type { CachedResult, ResultCache } from '../engine/types.js';

/** What `dq-store info` shows. */
export interface StoreInfo {
  /** Where the store is (a folder, or a Postgres URL without its password). */
  location: string;
  /** Bytes on disk (embedded: the database file; Postgres: the table with its indexes). */
  bytes: number;
  entries: number;
  /** ISO time of the oldest and newest check; undefined when empty. */
  oldest?: string;
  newest?: string;
}

/**
 * The result store (docs/architecture.md "The result store"): definitive answers kept across runs,
 * processes and machines, keyed by a digest of the engine's request key (scope digest + the input
 * exactly as sent; no secret in it). The engine asks it once per batch ({@link getMany}) for the inputs not
 * already answered in this run, and writes each definitive answer ({@link set}) the moment it
 * arrives; an engine batch returns only once the writes of its answers are committed, so whatever a
 * connector checkpoints after a batch is in the store, and a kill loses at most the answers of the
 * calls in flight and of the last burst of writes, none of them counted as done. Entries older than the store's max age are not
 * returned (they are called again, and overwritten).
 */
export interface ResultStore extends ResultCache {
  /** Where the store is, safe to print (no password). */
  readonly location: string;
  /** Entries of `keys` younger than the max age, in one round trip. */
  getMany(keys: readonly string[]): Promise<Map<string, CachedResult>>;
  info(): Promise<StoreInfo>;
  /** Removes entries checked before `Date.now() - olderThanMs`; returns how many. */
  prune(olderThanMs: number): Promise<number>;
  /** Removes every entry; returns how many. */
  clear(): Promise<number>;
  close(): Promise<void>;
}
