import { ENDPOINT_IDS, resolveThrottleOptions } from './limits.js';
import type { ThrottleOptions } from './limits.js';
import { monotonicMicros, sleep } from './sleep.js';
import type { EndpointId, Throttle } from './types.js';

/**
 * Layout of the shared memory (BigInt64Array slots).
 * Header: magic, layout version, burst, margin, decrease, floor, recovery per second (the last four
 * in parts per million), decrease cooldown (ms), cold-start gap (µs), longest Retry-After hold (µs).
 * Per endpoint, six slots: theoretical arrival time (TAT, µs on the monotonic clock), limit (milli
 * requests per second, 0 = unlimited), rate state (factor in ppm << 43 | time of the last decrease
 * in ms), number of slots handed out so far (the next ticket), where its lanes start and how many
 * there are. Then the lanes of every endpoint: one per request its limit allows in a second (none
 * above `MAX_LANES`), each the earliest time (µs) the next request of that lane may go (0: any time).
 */
const MAGIC = 0x4451_5448n; // "DQTH"
const LAYOUT_VERSION = 4n;
const HEADER = 10;
const PER_ENDPOINT = 6;
/** Most lanes of an endpoint (512 KiB); a limit above this many requests per second has none: its margin alone covers jitter. */
const MAX_LANES = 65_536;
const PPM = 1_000_000;
const TIME_BITS = 43n;
const TIME_MASK = (1n << TIME_BITS) - 1n;
/** A waiter woken late takes a fresh slot at most this many times, so a busy thread is not starved. */
const MAX_STALE_RETRIES = 3;
/** An endpoint with no slot taken for this long (µs) starts cold: the platform's window is empty. */
const IDLE_US = 1_000_000n;

/** A {@link Throttle} whose budget lives in shared memory, shared by every thread holding `buffer`. */
export interface SharedThrottle extends Throttle {
  /** Pass this in `workerData`; {@link attachSharedThrottle} in the worker joins the same budget. */
  readonly buffer: SharedArrayBuffer;
  /** The endpoint's current rate in requests per second after backoff (0 = unlimited). */
  currentRate(endpoint: EndpointId): number;
}

const SECOND_US = 1_000_000n;
/** Clock granularity between the platform's arrival stamp and our reading of an attempt's end. */
const ANSWER_GUARD_US = 1_000n;

const pack = (factorPpm: bigint, atMs: bigint): bigint => (factorPpm << TIME_BITS) | (atMs & TIME_MASK);

/**
 * Creates a GCRA rate limiter in a SharedArrayBuffer: one budget per endpoint for all threads of
 * this process. Defaults: the contract's limits (see `DEFAULT_RATE_LIMITS`), burst 1, margin 2 %.
 */
export function createSharedThrottle(options: ThrottleOptions = {}): SharedThrottle {
  const o = resolveThrottleOptions(options);
  const laneCounts = ENDPOINT_IDS.map((endpoint) =>
    o.limits[endpoint] > 0 && o.limits[endpoint] < MAX_LANES + 1 ? Math.max(1, Math.floor(o.limits[endpoint])) : 0,
  );
  const lanesFrom = HEADER + PER_ENDPOINT * ENDPOINT_IDS.length;
  const slots = new BigInt64Array(new SharedArrayBuffer((lanesFrom + laneCounts.reduce((x, y) => x + y, 0)) * 8));
  const header = [
    MAGIC,
    LAYOUT_VERSION,
    BigInt(o.burst),
    ppm(o.margin),
    ppm(o.decrease),
    ppm(o.floor),
    ppm(o.recoveryPerSecond),
    BigInt(Math.round(o.decreaseCooldownMs)),
    BigInt(Math.round(o.coldStartGapMs * 1000)),
    BigInt(Math.round(o.maxHoldMs * 1000)),
  ];
  header.forEach((v, i) => (slots[i] = v));
  let lane = lanesFrom;
  ENDPOINT_IDS.forEach((endpoint, e) => {
    const base = HEADER + e * PER_ENDPOINT;
    slots[base + 1] = BigInt(Math.round(o.limits[endpoint] * 1000));
    slots[base + 2] = pack(BigInt(PPM), 0n);
    slots[base + 4] = BigInt(lane);
    slots[base + 5] = BigInt(laneCounts[e] as number);
    lane += laneCounts[e] as number;
  });
  return attachSharedThrottle(slots.buffer as SharedArrayBuffer);
}

function ppm(fraction: number): bigint {
  return BigInt(Math.round(fraction * PPM));
}

/** Joins the budget of a throttle created (in any thread) by {@link createSharedThrottle}. */
export function attachSharedThrottle(buffer: SharedArrayBuffer): SharedThrottle {
  if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength < HEADER * 8) {
    throw new TypeError('attachSharedThrottle needs the `buffer` of a throttle made by createSharedThrottle');
  }
  const a = new BigInt64Array(buffer);
  const lanesFrom = HEADER + PER_ENDPOINT * ENDPOINT_IDS.length;
  const lastBase = HEADER + (ENDPOINT_IDS.length - 1) * PER_ENDPOINT;
  if (a[0] !== MAGIC || a[1] !== LAYOUT_VERSION || a.length < lanesFrom || a.length !== Number((a[lastBase + 4] ?? 0n) + (a[lastBase + 5] ?? 0n))) {
    throw new TypeError('attachSharedThrottle: buffer is not a throttle of this version of @dq/core');
  }
  const burst = a[2] ?? 1n;
  const margin = Number(a[3]) / PPM;
  const decrease = Number(a[4]);
  const floor = Number(a[5]);
  const recovery = Number(a[6]);
  const cooldownMs = a[7] ?? 0n;
  const coldGapUs = a[8] ?? 0n;
  const maxHoldUs = a[9] ?? 0n;

  const baseOf = (endpoint: EndpointId): number => {
    const e = ENDPOINT_IDS.indexOf(endpoint);
    if (e < 0) throw new RangeError(`throttle: unknown endpoint ${JSON.stringify(endpoint)}`);
    return HEADER + e * PER_ENDPOINT;
  };
  /** Rate factor (ppm) at `nowMs`: the last decrease plus the linear recovery since, capped at 1. */
  const factorAt = (state: bigint, nowMs: bigint): number => {
    const f = Number(state >> TIME_BITS);
    if (f >= PPM) return PPM;
    const elapsedMs = Number(nowMs - (state & TIME_MASK));
    return Math.min(PPM, f + (recovery * Math.max(0, elapsedMs)) / 1000);
  };
  const limitOf = (base: number): number => Number(Atomics.load(a, base + 1)) / 1000;
  /** How long a lane stays taken after its request was sent, µs: a second paced at 1 - margin (1010 ms at the default 1 %). */
  const laneSpanUs = BigInt(Math.round(Number(SECOND_US) / (1 - margin)));
  /** Moves lane `i` to `atUs` unless it is free later already. */
  const raise = (i: number, atUs: bigint): void => {
    if (i < 0) return;
    for (;;) {
      const at = Atomics.load(a, i);
      if (at >= atUs || Atomics.compareExchange(a, i, at, atUs) === at) return;
    }
  };
  /**
   * The lane of `ticket` (tickets `window` apart share it): any `window` + 1 requests have two in
   * one lane, so a sliding second that holds each lane's requests at most once holds at most
   * `window`. -1 for an endpoint without lanes (unlimited, or over `MAX_LANES` per second).
   */
  const laneOf = (base: number, ticket: number, window: number): number => {
    const lanes = Number(a[base + 5] ?? 0n);
    return lanes === 0 ? -1 : Number(a[base + 4] ?? 0n) + (ticket % Math.min(window, lanes));
  };

  return {
    buffer,
    currentRate(endpoint) {
      const base = baseOf(endpoint);
      const nowMs = monotonicMicros() / 1000n;
      return (limitOf(base) * factorAt(Atomics.load(a, base + 2), nowMs)) / PPM;
    },
    async acquire(endpoint, signal) {
      signal?.throwIfAborted();
      const base = baseOf(endpoint);
      const limit = limitOf(base);
      if (limit <= 0) return;
      const window = BigInt(Math.max(1, Math.floor(limit)));
      for (let attempt = 1; ; attempt++) {
        const now = monotonicMicros();
        const factor = factorAt(Atomics.load(a, base + 2), now / 1000n) / PPM;
        const interval = BigInt(Math.max(1, Math.round(1e6 / (limit * (1 - margin) * factor))));
        const tolerance = (burst - 1n) * interval;
        const tat = Atomics.load(a, base);
        const start = tat > now ? tat : now;
        // Hand out slots less than a second's worth ahead, so that `ended` can still move the
        // slot a second's worth after any request in flight (more callers than `limit` wait here).
        const horizon = (window - 1n) * interval;
        if (start - now > horizon) {
          await sleep(Math.ceil(Number(start - now - horizon) / 1000), signal);
          attempt--;
          continue;
        }
        // The first request after an idle spell goes now; the ones after it keep the cold-start gap.
        const next = start + interval + (now - tat > IDLE_US ? coldGapUs : 0n);
        if (Atomics.compareExchange(a, base, tat, next) !== tat) continue;
        const ticket = Number(Atomics.add(a, base + 3, 1n));
        const lane = laneOf(base, ticket, Number(window));
        // The request goes at its slot, or later when its lane says so: the request before it in its
        // lane ended late (see `ended`), even after this slot was handed out.
        let due = start - tolerance;
        let slept = false;
        try {
          for (;;) {
            const laneFree = lane < 0 ? 0n : Atomics.load(a, lane);
            if (laneFree > due) due = laneFree;
            const waitUs = due - monotonicMicros();
            if (waitUs <= 0n) break;
            await sleep(Math.ceil(Number(waitUs) / 1000), signal);
            slept = true;
          }
        } catch (err) {
          // Hand the slot back if nobody reserved after it; otherwise it stays spent (budget lost, never exceeded).
          Atomics.compareExchange(a, base, next, start);
          throw err;
        }
        // Woken more than one interval late (a stalled event loop): sending now would land on top of
        // the next slot's request, a burst the platform may answer with 429. Take a fresh slot instead.
        if (slept && monotonicMicros() - due > interval && attempt < MAX_STALE_RETRIES) continue;
        // Sent now: the next request of its lane goes a second (and the margin) from now at the
        // earliest, whenever this slot was meant to go; its end may move that further.
        raise(lane, monotonicMicros() + laneSpanUs);
        return ticket;
      }
    },
    ended(endpoint, ticket) {
      if (typeof ticket !== 'number') return;
      const base = baseOf(endpoint);
      const limit = limitOf(base);
      if (limit <= 0) return;
      // The platform allows `window` requests in any second, counted when each arrives: for this one
      // (if it arrived at all) some moment before now, the end of its attempt, whether an answer,
      // a network error, a timeout or an abort ended it. So the next request of its lane (`window`
      // tickets later) must go at least a second from now. Its slot is normally further away than
      // that (the margin); after a late send, a slow network, a stalled platform or a request that
      // timed out after the platform counted it, that one request waits for the lane, even when its
      // slot was handed out long ago (more callers waiting than a second's worth), while the slots
      // of the other lanes keep their times. The request's own slot is not handed back: it counts
      // against the rate whatever its outcome.
      raise(laneOf(base, ticket, Math.max(1, Math.floor(limit))), monotonicMicros() + SECOND_US + ANSWER_GUARD_US);
    },
    backoff(endpoint, retryAfterMs) {
      const base = baseOf(endpoint);
      const nowUs = monotonicMicros();
      const nowMs = nowUs / 1000n;
      for (;;) {
        const state = Atomics.load(a, base + 2);
        const lastMs = state & TIME_MASK;
        if (lastMs !== 0n && nowMs - lastMs < cooldownMs) break;
        const next = Math.max(floor, Math.floor((factorAt(state, nowMs) * decrease) / PPM));
        if (Atomics.compareExchange(a, base + 2, state, pack(BigInt(next), nowMs)) === state) break;
      }
      if (retryAfterMs !== undefined && retryAfterMs > 0) {
        // Nobody in this process sends to the endpoint before Retry-After has passed, or `maxHoldMs`.
        const holdUs = BigInt(Math.round(retryAfterMs * 1000));
        const until = nowUs + (holdUs < maxHoldUs ? holdUs : maxHoldUs);
        for (;;) {
          const tat = Atomics.load(a, base);
          if (tat >= until || Atomics.compareExchange(a, base, tat, until) === tat) break;
        }
      }
    },
  };
}
