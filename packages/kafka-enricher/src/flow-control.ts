import type { Consumer } from 'kafkajs';
import { METRIC } from './metrics.js';
import type { Metrics } from './metrics.js';

/** Why a partition is paused; it resumes only when no reason is left. */
export type PauseReason = 'backpressure' | 'retry' | 'shutdown';

/**
 * The in-flight budget and the pause state of the input partitions. A message counts from the
 * moment it is taken from a fetched batch until its offset is committed or its work is handed back;
 * the count never passes `maxInFlight`. When the budget is used up, partitions that bring more are
 * paused; they resume once the count falls to half the budget.
 */
export class FlowControl {
  /** The current consumer (it is replaced when a crashed one is restarted). */
  readonly #consumer: () => Consumer;
  readonly #metrics: Metrics;
  readonly #max: number;
  readonly #reasons = new Map<string, { topic: string; partition: number; reasons: Set<PauseReason> }>();
  #inFlight = 0;

  constructor(consumer: () => Consumer, metrics: Metrics, maxInFlight: number) {
    this.#consumer = consumer;
    this.#metrics = metrics;
    this.#max = maxInFlight;
  }

  get inFlight(): number {
    return this.#inFlight;
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
    this.#inFlight = Math.max(0, this.#inFlight - count);
    this.#metrics.set(METRIC.inFlight, {}, this.#inFlight);
    if (this.#inFlight <= this.#max / 2) {
      for (const entry of [...this.#reasons.values()]) this.resume(entry.topic, entry.partition, 'backpressure');
    }
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
  }

  /** After a rebalance: forgets every pause (the new assignment starts unpaused). */
  reset(): void {
    for (const entry of this.#reasons.values()) this.#consumer().resume([{ topic: entry.topic, partitions: [entry.partition] }]);
    this.#reasons.clear();
    this.#updateGauge();
  }

  #updateGauge(): void {
    this.#metrics.set(METRIC.paused, {}, this.#reasons.size);
  }
}
