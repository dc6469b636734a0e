import { hash } from 'node:crypto';

/**
 * The stored key of an engine request key: its SHA-256, base64url. Fixed length (an embedded
 * database and a Postgres index both limit key sizes), and the normalised input is not repeated
 * in the key: the stored result holds what the platform answered, not what was asked.
 */
export function storeKey(requestKey: string): string {
  // The one-shot digest: no Hash object per key (a third of the cost of createHash's chain, measured).
  return hash('sha256', requestKey, 'base64url');
}

/** Most stored keys a {@link MissedKeys} holds: a lookup whose answer never comes does not grow it for ever. */
const MISSED_KEYS_LIMIT = 100_000;

/**
 * The stored keys of inputs a lookup did not find, kept until their answer is written: an input
 * the store lacks is usually called and its answer stored next, so it is hashed once, not twice.
 */
export class MissedKeys {
  readonly #keys = new Map<string, string>();

  /** Remembers `stored`, the stored key of `requestKey`, which the store did not have. */
  missed(requestKey: string, stored: string): void {
    if (this.#keys.size >= MISSED_KEYS_LIMIT) this.#keys.clear();
    this.#keys.set(requestKey, stored);
  }

  /** The stored key of `requestKey`, for its write. */
  take(requestKey: string): string {
    const stored = this.#keys.get(requestKey);
    if (stored === undefined) return storeKey(requestKey);
    this.#keys.delete(requestKey);
    return stored;
  }
}
