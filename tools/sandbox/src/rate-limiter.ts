/**
 * Sliding-window rate limit per (account, endpoint), the literal reading of "N requests per
 * second" (contract part 8): a request is refused when `limit + slack` requests were accepted in
 * the last 1000 ms. A burst of `limit` at one instant is accepted. `slack` is 0 by default, so the
 * sandbox is as strict as the platform: exactly `limit` requests in any sliding second. A client
 * that keeps to the limit must keep its own margin for arrival jitter; a positive slack (sandbox
 * config `rateLimitSlack`) forgives that many extra requests per second.
 */
export class RateLimiter {
  /** Per key: accepted timestamps (ms, monotonic) in a ring of `size` slots. */
  readonly #windows = new Map<string, { size: number; ring: Float64Array; head: number; count: number }>();
  readonly #now: () => number;
  readonly #slack: number;

  constructor(options: { now?: () => number; slack?: number } = {}) {
    const { now = () => performance.now(), slack = 0 } = options;
    if (!Number.isInteger(slack) || slack < 0) throw new RangeError(`rate limit slack must be an integer ≥ 0; got ${slack}`);
    this.#now = now;
    this.#slack = slack;
  }

  /**
   * Takes one request from the budget of `key`.
   * @param limit requests per second; 0 or less means unlimited.
   * @returns 0 when allowed, otherwise the wait in ms until a request would be allowed.
   */
  take(key: string, limit: number): number {
    if (!(limit > 0)) return 0;
    const size = Math.max(1, Math.floor(limit)) + this.#slack;
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
