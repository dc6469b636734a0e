/** Requests accepted above the limit within one second, to absorb arrival jitter. */
export const JITTER_SLACK = 1;

/**
 * Sliding-window rate limit per (account, endpoint), the literal reading of "N requests per
 * second" (contract part 8): a request is refused when `limit + JITTER_SLACK` requests were
 * accepted in the last 1000 ms. A burst of `limit` at one instant is accepted; the one request of
 * slack absorbs arrival jitter (a client paced exactly at the limit whose request arrives late, a
 * stall of the server's event loop), so a client that keeps to the limit is not refused for it.
 */
export class RateLimiter {
  /** Per key: accepted timestamps (ms, monotonic) in a ring of `size` slots. */
  readonly #windows = new Map<string, { size: number; ring: Float64Array; head: number; count: number }>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /**
   * Takes one request from the budget of `key`.
   * @param limit requests per second; 0 or less means unlimited.
   * @returns 0 when allowed, otherwise the wait in ms until a request would be allowed.
   */
  take(key: string, limit: number): number {
    if (!(limit > 0)) return 0;
    const size = Math.max(1, Math.floor(limit)) + JITTER_SLACK;
    const now = this.#now();
    let w = this.#windows.get(key);
    if (w === undefined || w.size !== size) {
      w = { size, ring: new Float64Array(size), head: 0, count: 0 };
      this.#windows.set(key, w);
    }
    if (w.count < size) {
      w.ring[(w.head + w.count) % size] = now;
      w.count += 1;
      return 0;
    }
    const wait = (w.ring[w.head] as number) + 1000 - now;
    if (wait > 0) return wait;
    w.ring[w.head] = now;
    w.head = (w.head + 1) % size;
    return 0;
  }

  reset(): void {
    this.#windows.clear();
  }
}
