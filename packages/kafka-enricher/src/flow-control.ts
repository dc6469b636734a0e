import type { Consumer } from 'kafkajs';
import { METRIC } from './metrics.js';
import type { Metrics } from './metrics.js';

/** Why a partition is paused; it resumes only when no reason is left. */
export type PauseReason = 'retry' | 'shutdown';

/**
 * The in-flight budget and the pause state of the input partitions. A message counts from the
 * moment it is taken from a fetched batch until its offset is committed or its work is handed back;
 * the count never passes `maxInFlight`.
 *
 * When the budget is used up, the partition whose batch brings more waits for room inside kafkajs's
 * batch handler ({@link waitForRoom}) rather than being paused: kafkajs fetches again only after the
 * handler returns, so waiting holds the fetching back while the part of the batch already fetched is
 * kept and taken as room frees up. Pausing would make kafkajs drop the rest of the fetched batch and
 * fetch and decode it again after the resume (and sleep its fetch wait when every partition is
 * paused). Partitions waiting for room count as paused in the gauge.
 */
export class FlowControl {
  /** The current consumer (it is replaced when a crashed one is restarted). */
  readonly #consumer: () => Consumer;
  readonly #metrics: Metrics;
  readonly #max: number;
  readonly #reasons = new Map<string, { topic: string; partition: number; reasons: Set<PauseReason> }>();
  /** Partitions whose batch handler waits for room (keys as in {@link #reasons}). */
  readonly #waiting = new Set<string>();
  #wake: (() => void) | undefined;
  #woken: Promise<void> | undefined;
  #inFlight = 0;

  constructor(consumer: () => Consumer, metrics: Metrics, maxInFlight: number) {
    this.#consumer = consumer;
    this.#metrics = metrics;
    this.#max = maxInFlight;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Room left in the budget. */
  get room(): number {
    return this.#max - this.#inFlight;
  }

  /** Takes up to `wanted` messages into the budget and returns how many were granted. */
  take(wanted: number): number {
    const granted = Math.max(0, Math.min(wanted, this.#max - this.#inFlight));
    this.#inFlight += granted;
    this.#metrics.set(METRIC.inFlight, {}, this.#inFlight);
    return granted;
  }

  /** Gives `count` messages back to the budget (committed, or handed back to Kafka). */
  release(count: number): void {
    if (count <= 0) return;
    this.#inFlight = Math.max(0, this.#inFlight - count);
    this.#metrics.set(METRIC.inFlight, {}, this.#inFlight);
    this.wake();
  }

  /**
   * Waits, as `topic`/`partition`, until {@link wake} is called (room freed, a pause, a rebalance, a
   * stop) or `timeoutMs` passed, so the caller can heartbeat and look again whether, and how much, it
   * may take. Returns at once when the budget has room for `wanted` messages.
   */
  async waitForRoom(topic: string, partition: number, wanted: number, timeoutMs: number): Promise<void> {
    if (this.room >= Math.min(wanted, this.#max)) return;
    const key = `${topic}\u0000${partition}`;
    this.#waiting.add(key);
    this.#updateGauge();
    this.#woken ??= new Promise<void>((resolve) => (this.#wake = resolve));
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([this.#woken, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    } finally {
      clearTimeout(timer);
      this.#waiting.delete(key);
      this.#updateGauge();
    }
  }

  /** Wakes every {@link waitForRoom} so it looks again (room freed, a rebalance, a stop). */
  wake(): void {
    const wake = this.#wake;
    if (!wake) return;
    this.#wake = undefined;
    this.#woken = undefined;
    wake();
  }

  /** Whether `topic`/`partition` is paused for any reason. */
  isPaused(topic: string, partition: number): boolean {
    return this.#reasons.has(`${topic}\u0000${partition}`);
  }

  /** Pauses fetching `topic`/`partition` for `reason` (idempotent). */
  pause(topic: string, partition: number, reason: PauseReason): void {
    const key = `${topic}\u0000${partition}`;
    let entry = this.#reasons.get(key);
    if (!entry) {
      entry = { topic, partition, reasons: new Set() };
      this.#reasons.set(key, entry);
      this.#consumer().pause([{ topic, partitions: [partition] }]);
    }
    entry.reasons.add(reason);
    this.#updateGauge();
    this.wake();
  }

  /** Drops `reason` for `topic`/`partition`; fetching resumes when no reason is left. */
  resume(topic: string, partition: number, reason: PauseReason): void {
    const key = `${topic}\u0000${partition}`;
    const entry = this.#reasons.get(key);
    if (!entry || !entry.reasons.delete(reason) || entry.reasons.size > 0) return;
    this.#reasons.delete(key);
    this.#consumer().resume([{ topic, partitions: [partition] }]);
    this.#updateGauge();
  }

  /** Stops fetching the whole topic (shutdown); kept until the consumer disconnects. */
  pauseTopic(topic: string): void {
    this.#consumer().pause([{ topic }]);
    this.wake();
  }

  /** After a rebalance: forgets every pause (the new assignment starts unpaused). */
  reset(): void {
    for (const entry of this.#reasons.values()) this.#consumer().resume([{ topic: entry.topic, partitions: [entry.partition] }]);
    this.#reasons.clear();
    this.#updateGauge();
    this.wake();
  }

  #updateGauge(): void {
    let paused = this.#reasons.size;
    for (const key of this.#waiting) if (!this.#reasons.has(key)) paused++;
    this.#metrics.set(METRIC.paused, {}, paused);
  }
}

/**
 * How many records the engine is given at a time, over all partitions: a few times the engine's
 * concurrency, enough to keep every connection busy, few enough that the records handed to the
 * engine are about the ones whose calls are under way. A stop (SIGTERM) finishes those and hands
 * the rest back untouched: with the default 32 connections, 256 records, under 3 s at the
 * contract's 100 calls per second, where the whole in-flight budget (5000) would take 50 s.
 */
export class CallWindow {
  /** Records per engine call: a quarter of the window, so the next slices wait ready while one is answered. */
  readonly slice: number;
  readonly #capacity: number;
  #used = 0;
  #closed = false;
  readonly #waiters: Array<{ n: number; grant: (admitted: boolean) => void }> = [];

  constructor(concurrency: number) {
    this.#capacity = 8 * Math.max(1, concurrency);
    this.slice = this.#capacity / 4;
  }

  /**
   * Waits, in turn, until `n` records (at most {@link slice}) may go to the engine: true then (give
   * them back with {@link release}), false once the window is closed (nothing more is to start).
   * Rejects with the abort reason when `signal` aborts first.
   */
  acquire(n: number, signal: AbortSignal): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.#waiters.length === 0 && this.#used + n <= this.#capacity) {
      this.#used += n;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve, reject) => {
      const waiter = {
        n,
        grant: (admitted: boolean): void => {
          signal.removeEventListener('abort', onAbort);
          resolve(admitted);
        },
      };
      const onAbort = (): void => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(signal.reason as Error);
        this.#admit();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Gives back `n` records whose engine call settled. */
  release(n: number): void {
    this.#used = Math.max(0, this.#used - n);
    this.#admit();
  }

  /** Lets no more records in (a graceful stop): every waiting and later {@link acquire} gets false. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.grant(false);
  }

  #admit(): void {
    while (!this.#closed && this.#waiters.length > 0 && this.#used + this.#waiters[0]!.n <= this.#capacity) {
      const w = this.#waiters.shift()!;
      this.#used += w.n;
      w.grant(true);
    }
  }
}
