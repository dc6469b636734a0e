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
    records: 0, byStatus: zeroByStatus(), byClass: zeroByClass(),
    apiCalls: 0, callsSavedByDedup: 0, callsSavedByCache: 0, retries: 0, failures: [], failuresOmitted: 0, durationMs: 0,
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
  #retries = 0;
  #failures: RunReport['failures'] = [];
  #failuresOmitted = 0;
  #busyMs = 0;
  #active = 0;
  #since = 0;

  /** @param maxFailures most failures listed in the report (default 100); the rest are only counted. */
  constructor(maxFailures = 100) {
    this.#maxFailures = maxFailures;
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
  addCalls(calls: number, retries: number): void {
    this.#apiCalls += calls;
    this.#retries += retries;
  }

  /** Counts one record's final result. */
  addResult(result: RecordResult): void {
    this.#records += 1;
    this.#byStatus[result.status] += 1;
    if (result.resultClass) this.#byClass[result.resultClass] += 1;
    if (result.source === 'dedup') this.#savedByDedup += 1;
    if (result.source === 'cache') this.#savedByCache += 1;
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
      retries: this.#retries,
      failures: this.#failures.map((f) => ({ ...f })),
      failuresOmitted: this.#failuresOmitted,
      durationMs: Math.round(this.#busyMs + running),
    };
  }
}
