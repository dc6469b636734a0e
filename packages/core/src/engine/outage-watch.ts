import { DqError } from '../errors/index.js';

/** Calls in a row that must all fail to reach the platform (after their retries) to call it an outage. */
export const OUTAGE_WINDOW = 8;

/**
 * Calls in a row that failed last, with none running that could still tell, that make an outage:
 * at the end of a batch or a file fewer than {@link OUTAGE_WINDOW} calls may be left, and two
 * records failing on their own one after the other, with no answer after them, is far less likely
 * than the platform gone.
 */
export const OUTAGE_TAIL = 2;

/** What becomes of a call that could not reach the platform. */
export type Verdict = 'isolated' | 'outage';

/** Code of the error `Engine.process` rejects with when the platform cannot be reached. */
export const PLATFORM_UNREACHABLE = 'platform-unreachable';

interface Held {
  readonly at: number;
  readonly resolve: (verdict: Verdict) => void;
}

/**
 * Tells an outage of the platform from a record whose own call failed. Every call that ends
 * without an answer from the platform (connection refused or reset, timeout, a 5xx, after the
 * transport's retries) is held until one of these decides it:
 * - {@link OUTAGE_WINDOW} calls in a row ended without an answer, none answered in between
 *   (`outage`: the run stops so that the records are asked again later, none is finalised) —
 *   also when the platform answers again afterwards: a short outage is still one, and its
 *   records are not the records' own failures;
 * - the platform answers another call that ended after it, with fewer than that in a row before
 *   the answer: it failed on its own (`isolated`, the record is `unavailable`);
 * - no call is left running that could tell: `outage` when every call since the engine started
 *   failed, or the last {@link OUTAGE_TAIL} or more did with no answer after them (fewer than the
 *   window were left to make), else `isolated` (one failure, last: a record's own, most likely).
 * Times are the wall clock of the moment each call ended, in any thread, with a fraction of a
 * millisecond. A chunk's failures are told before its answers (see {@link answered}), so that
 * the order of their ends, not the order they are reported in, decides.
 */
export class OutageWatch {
  /** End of the last call the platform answered (0: none yet). */
  #lastAnswerAt = 0;
  /** Calls that ended so far, answered or not. */
  #ended = 0;
  /** End times of the calls that failed after the last answer. */
  #streak: number[] = [];
  #held: Held[] = [];
  #lastFailure = '';
  /** An outage found behind an answer (the platform back meanwhile), for {@link decide} to report. */
  #found: DqError | undefined;
  /** The end of the last failure of an outage {@link decide} reported. */
  #reportedThrough = 0;

  /**
   * Calls of a chunk the platform answered; `lastAnswerAt` the end of the last of them, `earlier`
   * the ends (ascending) of those that ended after the chunk's first failure, when it had one.
   */
  answered(count: number, lastAnswerAt: number, earlier: readonly number[] = []): void {
    this.#ended += count;
    if (count === 0) return;
    for (const at of earlier) this.#answerAt(at);
    this.#answerAt(lastAnswerAt);
  }

  /** An answer that ended at `at`: the failures before it are decided. */
  #answerAt(at: number): void {
    if (at <= this.#lastAnswerAt) return;
    const before = this.#streak.filter((t) => t < at);
    const verdict: Verdict = before.length >= OUTAGE_WINDOW ? 'outage' : 'isolated';
    if (verdict === 'outage' && before.some((t) => t > this.#reportedThrough)) this.#found ??= this.#error(before, at);
    this.#lastAnswerAt = at;
    this.#streak = this.#streak.filter((t) => t >= at);
    const still: Held[] = [];
    for (const h of this.#held) {
      if (h.at < at) h.resolve(verdict);
      else still.push(h);
    }
    this.#held = still;
  }

  /** A call that ended at `at` without an answer; resolves with its verdict. */
  failed(at: number, failure: string): Promise<Verdict> {
    this.#ended += 1;
    this.#lastFailure = failure;
    if (at < this.#lastAnswerAt) return Promise.resolve('isolated');
    this.#streak.push(at);
    return new Promise<Verdict>((resolve) => this.#held.push({ at, resolve }));
  }

  /**
   * Decides what can be decided; `quiet` when no call is running that could still tell. Returns the
   * run-stop error when this is an outage (the held calls are then resolved `outage`).
   */
  decide(quiet: boolean): DqError | undefined {
    const found = this.#found;
    this.#found = undefined;
    if (this.#held.length === 0) return found;
    const streak = this.#streak.length;
    // At the tail, only the failures not yet decided count: one a quiet moment already found to be
    // a record's own (a record asked again that fails again) makes no outage with the next.
    const down = streak >= OUTAGE_WINDOW || (quiet && (streak >= this.#ended || this.#held.length >= OUTAGE_TAIL));
    if (!down && !quiet) return found;
    const held = this.#held;
    this.#held = [];
    for (const h of held) h.resolve(down ? 'outage' : 'isolated');
    if (!down) return found;
    // Reported: the next answer (the platform back) does not report these failures again.
    this.#reportedThrough = Math.max(this.#reportedThrough, ...this.#streak);
    return found ?? this.#error(this.#streak);
  }

  /** The run stop for `streak`, the ends of the calls that failed in a row (`answeredAt`: the answer that came after them). */
  #error(streak: readonly number[], answeredAt?: number): DqError {
    const since = new Date(streak.reduce((a, b) => Math.min(a, b))).toISOString();
    const last = this.#lastAnswerAt === 0 ? 'no call was answered before' : `the last answer before came at ${new Date(this.#lastAnswerAt).toISOString()}`;
    const back = answeredAt === undefined ? '' : ` (it answered again at ${new Date(answeredAt).toISOString()})`;
    return new DqError(
      `the platform could not be reached since ${since}${back}: ${streak.length} calls in a row failed after their retries (${this.#lastFailure}); ${last}. No record was marked unavailable for it; try again later`,
      { code: PLATFORM_UNREACHABLE, retriable: true, scope: 'run' },
    );
  }
}
