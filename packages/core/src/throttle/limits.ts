import type { EndpointId } from './types.js';

/** Every endpoint with a budget of its own, in the order of their slots in shared memory. */
export const ENDPOINT_IDS: readonly EndpointId[] = ['validate', 'batch', 'start-session', 'autocomplete', 'company', 'phone', 'download'];

/**
 * Requests per second per endpoint. validate, batch, start-session and autocomplete are the
 * contract's per-customer limits (part 8). The contract sets none for company, phone and download;
 * ours are conservative guesses — company 10/s (each call is a paid search), phone 10/s (the
 * describe request is metadata), download 2/s (each request is a large file).
 */
export const DEFAULT_RATE_LIMITS: Readonly<Record<EndpointId, number>> = {
  validate: 30,
  batch: 100,
  'start-session': 30,
  autocomplete: 60,
  company: 10,
  phone: 10,
  download: 2,
};

/** Options shared by the in-process and the Postgres-backed throttle. */
export interface ThrottleOptions {
  /** Requests per second per endpoint; 0 means unlimited. Default {@link DEFAULT_RATE_LIMITS}. */
  limits?: Partial<Record<EndpointId, number>>;
  /**
   * Requests that may go out back to back after an idle spell (GCRA burst tolerance). Default 1:
   * strictly paced, because a platform counting "N per second" over any one-second window answers
   * a burst on top of the full rate with 429.
   */
  burst?: number;
  /**
   * Fraction of each limit kept unused. The platform allows exactly `limit` requests in any sliding
   * second, counted when they arrive, and forgives nothing. Paced at 99 % (the default, 0.01), the
   * requests one second's worth apart are sent 1010 ms apart, and their answers (which come after
   * the platform counted them) normally arrive within those 10 ms; when an attempt ends later (a
   * late send, a stalled platform, a timeout), `ended` moves the next request of its lane back (in
   * shared memory, or in the Postgres row for every process of the account), so jitter does not
   * cost a 429.
   */
  margin?: number;
  /** After a 429 the endpoint's rate is multiplied by this. Default 0.5. */
  decrease?: number;
  /** Lowest fraction of the limit a run of 429s can push the rate to. Default 0.1. */
  floor?: number;
  /** Fraction of the limit regained per second after a decrease (additive increase). Default 0.2: a halved rate is whole again within 2.5 s, so one 429 from timing jitter costs little, while repeated 429s keep halving it. */
  recoveryPerSecond?: number;
  /** 429s within this many ms of a decrease do not decrease again (one overshoot, many answers). Default 1000. */
  decreaseCooldownMs?: number;
  /**
   * After a second or more with no request to an endpoint, the first one goes at once and the
   * second this many ms later than pacing alone would send it. The first requests of a run travel
   * on new connections (TCP, TLS) to a server that may be cold, so they reach it later than the
   * ones after them; without the gap the platform's first one-second window sees them squeezed
   * together with the requests sent a second later, and answers 429. Default 50.
   */
  coldStartGapMs?: number;
  /**
   * Longest a 429's `Retry-After` holds every sender of the endpoint back, in ms. Default 30 000,
   * the retry policy's default `maxRetryAfterMs`: the transport stops the run rather than wait
   * longer, and one answer must not stall every thread (or every process) for an hour.
   */
  maxHoldMs?: number;
}

/** {@link ThrottleOptions} with every default filled in and checked. */
export interface ResolvedThrottleOptions {
  limits: Record<EndpointId, number>;
  burst: number;
  margin: number;
  decrease: number;
  floor: number;
  recoveryPerSecond: number;
  decreaseCooldownMs: number;
  coldStartGapMs: number;
  maxHoldMs: number;
}

function fraction(name: string, value: number, min: number, max: number): number {
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new RangeError(`throttle option ${name} must be a number from ${min} to ${max}; got ${value}`);
  }
  return value;
}

/** Fills defaults and refuses bad values, naming the option. */
export function resolveThrottleOptions(opts: ThrottleOptions = {}): ResolvedThrottleOptions {
  const limits = { ...DEFAULT_RATE_LIMITS };
  for (const [endpoint, rate] of Object.entries(opts.limits ?? {})) {
    if (!ENDPOINT_IDS.includes(endpoint as EndpointId)) {
      throw new RangeError(`throttle limits: unknown endpoint ${JSON.stringify(endpoint)}; one of ${ENDPOINT_IDS.join(', ')}`);
    }
    if (rate === undefined) continue;
    limits[endpoint as EndpointId] = fraction(`limits.${endpoint}`, rate, 0, 1_000_000);
  }
  const burst = opts.burst ?? 1;
  if (!Number.isInteger(burst) || burst < 1) {
    throw new RangeError(`throttle option burst must be an integer ≥ 1; got ${burst}`);
  }
  return {
    limits,
    burst,
    margin: fraction('margin', opts.margin ?? 0.01, 0, 0.5),
    decrease: fraction('decrease', opts.decrease ?? 0.5, 0.01, 1),
    floor: fraction('floor', opts.floor ?? 0.1, 0.001, 1),
    recoveryPerSecond: fraction('recoveryPerSecond', opts.recoveryPerSecond ?? 0.2, 0, 1000),
    decreaseCooldownMs: fraction('decreaseCooldownMs', opts.decreaseCooldownMs ?? 1000, 0, 3_600_000),
    coldStartGapMs: fraction('coldStartGapMs', opts.coldStartGapMs ?? 50, 0, 60_000),
    maxHoldMs: fraction('maxHoldMs', opts.maxHoldMs ?? 30_000, 0, 86_400_000),
  };
}
