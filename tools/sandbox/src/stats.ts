/** Stats keys: the endpoints of the four interfaces plus `admin` and `other` (404s and the like). */
export const ENDPOINTS = ['validate', 'batch', 'start-session', 'autocomplete', 'company', 'phone-describe', 'phone', 'download', 'admin', 'other'] as const;
export type EndpointKey = (typeof ENDPOINTS)[number];

/** What a response ended as: its status code, or `reset` when the connection was dropped. */
export type Outcome = number | 'reset';

/** A snapshot of the sandbox's counters (see `GET /__admin/stats`). */
export interface SandboxStats {
  /** Requests per endpoint: total and per outcome (`"200"`, `"429"`, `"reset"`...). */
  requests: Record<string, { total: number; byStatus: Record<string, number> }>;
  /** Billable calls answered with success, per account id. */
  billable: Record<string, number>;
  /** Injected faults per endpoint group. */
  faults: Record<string, { errors: number; resets: number; truncations: number; delayed: number }>;
  /** Quota warnings recorded (75 % of a plan), per account id. */
  quotaWarnings: Record<string, number>;
  /**
   * Requests being handled at once, per endpoint: `now`, and `max`, the most at any moment since the
   * last reset (from the request's arrival until its response finished or its connection closed).
   */
  concurrent: Record<string, { now: number; max: number }>;
}

/** In-memory counters; every method is O(1). */
export class StatsRecorder {
  #stats: SandboxStats = StatsRecorder.#empty();

  static #empty(): SandboxStats {
    return { requests: {}, billable: {}, faults: {}, quotaWarnings: {}, concurrent: {} };
  }

  /** Counts one finished request. */
  response(endpoint: EndpointKey, outcome: Outcome): void {
    const e = (this.#stats.requests[endpoint] ??= { total: 0, byStatus: {} });
    e.total += 1;
    const key = String(outcome);
    e.byStatus[key] = (e.byStatus[key] ?? 0) + 1;
  }

  /** A request of `endpoint` started being handled; returns the function that ends it (call once). */
  started(endpoint: EndpointKey): () => void {
    const c = (this.#stats.concurrent[endpoint] ??= { now: 0, max: 0 });
    c.now += 1;
    if (c.now > c.max) c.max = c.now;
    const stats = this.#stats;
    return () => {
      // A reset in between started a new count: the request is not in it.
      if (this.#stats !== stats) return;
      c.now -= 1;
    };
  }

  /** Counts one billable call of an account. */
  billable(accountId: string): void {
    this.#stats.billable[accountId] = (this.#stats.billable[accountId] ?? 0) + 1;
  }

  /** Counts one injected fault. */
  fault(group: string, kind: 'errors' | 'resets' | 'truncations' | 'delayed'): void {
    const f = (this.#stats.faults[group] ??= { errors: 0, resets: 0, truncations: 0, delayed: 0 });
    f[kind] += 1;
  }

  /** Counts one quota warning. */
  quotaWarning(accountId: string): void {
    this.#stats.quotaWarnings[accountId] = (this.#stats.quotaWarnings[accountId] ?? 0) + 1;
  }

  /** A deep copy, safe to keep and serialise. */
  snapshot(): SandboxStats {
    return structuredClone(this.#stats);
  }

  reset(): void {
    this.#stats = StatsRecorder.#empty();
  }
}
