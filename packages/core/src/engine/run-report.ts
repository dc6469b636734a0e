import type { RecordResult, RecordStatus, ResultClass, RunReport } from './types.js';

import { RECORD_STATUSES as STATUSES, RESULT_CLASSES as CLASSES } from '../schemas/vocabularies.js';

/** Counts per record status, all zero. */
export function zeroByStatus(): Record<RecordStatus, number> {
  return Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<RecordStatus, number>;
}

/** Counts per result class, all zero. */
export function zeroByClass(): Record<ResultClass, number> {
  return Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<ResultClass, number>;
}

/** The report of a run that processed nothing. */
export function emptyRunReport(): RunReport {
  return {
    records: 0,
    byStatus: zeroByStatus(),
    byClass: zeroByClass(),
    apiCalls: 0,
    callsSavedByDedup: 0,
    callsSavedByCache: 0,
    callsSavedByStore: 0,
    storeLookups: 0,
    storeHits: 0,
    storeHitRate: 0,
    retries: 0,
    failures: [],
    failuresOmitted: 0,
    durationMs: 0,
  };
}

/** Accumulates the run report of one engine across all its `process` calls. */
export class RunReportBuilder {
  readonly #maxFailures: number;
  #records = 0;
  #byStatus = zeroByStatus();
  #byClass = zeroByClass();
  #apiCalls = 0;
  #savedByDedup = 0;
  #savedByCache = 0;
  #savedByStore = 0;
  #storeLookups = 0;
  #storeHits = 0;
  #retries = 0;
  #failures: RunReport['failures'] = [];
  #failuresOmitted = 0;
  #busyMs = 0;
  #active = 0;
  #since = 0;
  #rate = new CallRateHistogram();
  readonly #rateLimit: number | undefined;

  /** @param maxFailures most failures listed in the report (default 100); the rest are only counted. */
  constructor(maxFailures = 100, rateLimit?: number) {
    this.#maxFailures = maxFailures;
    this.#rateLimit = rateLimit;
  }

  /** A `process` call started; the report's duration covers the time any call is running. */
  begin(): void {
    const now = performance.now();
    if (this.#active++ === 0) this.#since = now;
  }

  /** A `process` call ended (resolved or rejected). */
  end(): void {
    if (--this.#active === 0) this.#busyMs += performance.now() - this.#since;
  }

  /** Requests sent to the platform by workers, and the extra attempts they needed. */
  addCalls(calls: number, retries: number, seconds: readonly (readonly [number, number])[] = []): void {
    this.#apiCalls += calls;
    this.#retries += retries;
    for (const [second, count] of seconds) this.#rate.add(second, count);
  }

  /** Counts one record's final result. */
  addResult(result: RecordResult): void {
    this.#records += 1;
    this.#byStatus[result.status] += 1;
    if (result.resultClass) this.#byClass[result.resultClass] += 1;
    if (result.source === 'dedup') this.#savedByDedup += 1;
    if (result.source === 'cache') this.#savedByCache += 1;
    if (result.source === 'store') this.#savedByStore += 1;
  }

  /** Distinct inputs looked up in the result store, and how many it answered. */
  addStoreLookups(lookups: number, hits: number): void {
    this.#storeLookups += lookups;
    this.#storeHits += hits;
  }

  /** Lists a failed call once (not once per record sharing it). */
  addFailure(failure: { requestId?: string; code: string; message: string }): void {
    if (this.#failures.length < this.#maxFailures) this.#failures.push(failure);
    else this.#failuresOmitted += 1;
  }

  /** A copy of the counts so far. */
  snapshot(): RunReport {
    const running = this.#active > 0 ? performance.now() - this.#since : 0;
    return {
      records: this.#records,
      byStatus: { ...this.#byStatus },
      byClass: { ...this.#byClass },
      apiCalls: this.#apiCalls,
      callsSavedByDedup: this.#savedByDedup,
      callsSavedByCache: this.#savedByCache,
      callsSavedByStore: this.#savedByStore,
      storeLookups: this.#storeLookups,
      storeHits: this.#storeHits,
      storeHitRate: this.#storeLookups === 0 ? 0 : Number((this.#storeHits / this.#storeLookups).toFixed(4)),
      retries: this.#retries,
      failures: this.#failures.map((f) => ({ ...f })),
      failuresOmitted: this.#failuresOmitted,
      durationMs: Math.round(this.#busyMs + running),
      callsPerSecond: { ...this.#rate.snapshot(), ...(this.#rateLimit ? { limit: this.#rateLimit } : {}) },
    };
  }
}

/** At most this many buckets: past it, buckets double in width (a long run stays a few KB). */
export const MAX_RATE_BUCKETS = 240;

/**
 * Calls made per second of wall time, bounded: `counts[i]` calls ended in the `bucketSeconds`
 * seconds from `startSecond + i * bucketSeconds`. When a run outlasts {@link MAX_RATE_BUCKETS}
 * buckets, neighbouring buckets are merged and the width doubles, so a report of a week-long run
 * is as small as one of four minutes.
 */
export class CallRateHistogram {
  #start: number | undefined;
  #width = 1;
  #counts: number[] = [];

  add(second: number, count: number): void {
    if (count <= 0) return;
    if (this.#start === undefined) this.#start = second;
    if (second < this.#start) {
      // A chunk that ended earlier than the first one seen (threads answer out of order): grow to the left.
      const shift = Math.ceil((this.#start - second) / this.#width);
      this.#counts = [...new Array<number>(shift).fill(0), ...this.#counts];
      this.#start -= shift * this.#width;
    }
    let index = Math.floor((second - this.#start) / this.#width);
    while (index >= MAX_RATE_BUCKETS) {
      const merged: number[] = [];
      for (let i = 0; i < this.#counts.length; i += 2) merged.push((this.#counts[i] ?? 0) + (this.#counts[i + 1] ?? 0));
      this.#counts = merged;
      this.#width *= 2;
      index = Math.floor((second - this.#start) / this.#width);
    }
    while (this.#counts.length <= index) this.#counts.push(0);
    this.#counts[index] = (this.#counts[index] ?? 0) + count;
  }

  snapshot(): { startSecond: number; bucketSeconds: number; counts: number[] } {
    return { startSecond: this.#start ?? 0, bucketSeconds: this.#width, counts: [...this.#counts] };
  }
}
