import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { RunReport } from '@dq/core';

type Labels = Readonly<Record<string, string>>;

interface Family {
  type: 'counter' | 'gauge';
  values: Map<string, { labels: Labels; value: number }>;
}

/** Names of the metric families dq-kafka exports (README "Metrics"). */
export const METRIC = {
  fetched: 'dq_kafka_messages_fetched_total',
  consumed: 'dq_kafka_messages_consumed_total',
  produced: 'dq_kafka_messages_produced_total',
  dlq: 'dq_kafka_dlq_messages_total',
  records: 'dq_kafka_records_total',
  classes: 'dq_kafka_result_class_total',
  lag: 'dq_kafka_consumer_lag',
  inFlight: 'dq_kafka_in_flight_messages',
  paused: 'dq_kafka_paused_partitions',
  commits: 'dq_kafka_offset_commits_total',
  batchRetries: 'dq_kafka_batch_retries_total',
  apiCalls: 'dq_kafka_api_calls_total',
  apiRetries: 'dq_kafka_api_retries_total',
  savedByDedup: 'dq_kafka_calls_saved_by_dedup_total',
  savedByCache: 'dq_kafka_calls_saved_by_cache_total',
  savedByStore: 'dq_kafka_calls_saved_by_store_total',
  storeHitRate: 'dq_kafka_store_hit_rate',
  up: 'dq_kafka_up',
  billableCalls: 'dq_kafka_billable_calls_total',
  maxCalls: 'dq_kafka_max_calls',
  budgetShared: 'dq_kafka_rate_budget_shared',
} as const;

const HELP: Record<(typeof METRIC)[keyof typeof METRIC], [Family['type'], string, labelNames?: readonly string[]]> = {
  [METRIC.fetched]: ['counter', 'Input messages handed over by the Kafka client, a message again each time it is fetched again.'],
  [METRIC.consumed]: ['counter', 'Input messages taken from the input topic (redeliveries included).'],
  [METRIC.produced]: ['counter', 'Enriched messages acknowledged by the output topic.'],
  [METRIC.dlq]: ['counter', 'Messages acknowledged by the dead-letter topic, by reason code.', ['reason']],
  [METRIC.records]: ['counter', 'Records answered by the platform, by status.', ['status']],
  [METRIC.classes]: ['counter', 'Address results by result class (A-F).', ['class']],
  [METRIC.lag]: ['gauge', 'High watermark minus the next offset to commit, per input partition (messages).', ['topic', 'partition']],
  [METRIC.inFlight]: ['gauge', 'Messages taken from Kafka whose offsets are not yet committed.'],
  [METRIC.paused]: ['gauge', 'Input partitions held back: waiting for room in the in-flight budget, or paused for a transient failure.'],
  [METRIC.commits]: ['counter', 'Offset commits that succeeded.'],
  [METRIC.batchRetries]: ['counter', 'Batches repeated because records came back unavailable (5xx, timeouts, 429).'],
  [METRIC.apiCalls]: ['counter', 'Distinct requests sent to the platform.'],
  [METRIC.apiRetries]: ['counter', 'Repeated HTTP attempts made by the transport (429, 5xx, timeouts).'],
  [METRIC.savedByDedup]: ['counter', 'Records answered by sharing the call of an identical input.'],
  [METRIC.savedByCache]: ['counter', "Records answered by this process's cache of answers (an input seen in an earlier batch)."],
  [METRIC.savedByStore]: ['counter', 'Records answered from the result store (answers bought earlier).'],
  [METRIC.storeHitRate]: ['gauge', 'Share of the inputs looked up in the result store that it answered.'],
  [METRIC.up]: ['gauge', '1 while the consumer is in its group and consuming, else 0.'],
  [METRIC.billableCalls]: ['counter', 'HTTP calls sent to billable endpoints (retries included), counted against --max-calls.'],
  [METRIC.maxCalls]: ['gauge', 'The spending cap --max-calls (0: none); the process stops with exit 5 before exceeding it.'],
  [METRIC.budgetShared]: ['gauge', "1 when the rate budget is shared by every process of the account (Postgres), 0 when it is this process's own."],
};

export interface MetricsOptions {
  /**
   * Also export prom-client's default process metrics (CPU, resident memory, heap, event-loop lag,
   * GC, open file descriptors), as `process_*` and `nodejs_*` (default true).
   */
  defaultMetrics?: boolean;
}

/**
 * Counters and gauges of one dq-kafka process, exposed through prom-client on a registry of its
 * own (not prom-client's global one). The message path only adds to plain numbers (`inc`, `set`);
 * prom-client reads them in its `collect` callbacks when /metrics is scraped, so counting costs
 * what it did before prom-client.
 */
export class Metrics {
  readonly #families = new Map<string, Family>();
  readonly #registry = new Registry();
  #report: (() => RunReport) | undefined;

  constructor(options: MetricsOptions = {}) {
    for (const [name, [type, help, labelNames = []]] of Object.entries(HELP)) {
      const family: Family = { type, values: new Map() };
      this.#families.set(name, family);
      const common = { name, help, labelNames, registers: [this.#registry] };
      if (type === 'counter') {
        new Counter({
          ...common,
          collect() {
            this.reset();
            for (const { labels, value } of family.values.values()) this.inc(labels, value);
          },
        });
      } else {
        new Gauge({
          ...common,
          collect() {
            this.reset();
            for (const { labels, value } of family.values.values()) this.set(labels, value);
          },
        });
      }
    }
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.#registry });
  }

  /** Adds `by` (default 1) to a counter. */
  inc(name: string, labels: Labels = {}, by = 1): void {
    const entry = this.#entry(name, labels);
    entry.value += by;
  }

  /** Sets a gauge. */
  set(name: string, labels: Labels, value: number): void {
    this.#entry(name, labels).value = value;
  }

  /** Current value of a series (0 when never touched); used by tests and the health check. */
  get(name: string, labels: Labels = {}): number {
    return this.#families.get(name)?.values.get(seriesKey(labels))?.value ?? 0;
  }

  /** Removes every series of a gauge (e.g. lag of partitions no longer assigned). */
  clear(name: string): void {
    this.#families.get(name)?.values.clear();
  }

  /** API call and retry counts are read from the engine's report at scrape time. */
  useEngineReport(report: () => RunReport): void {
    this.#report = report;
  }

  /** The content type of {@link render}'s text (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.#registry.contentType;
  }

  /** The exposition text: dq-kafka's families, then the process's default metrics. */
  render(): Promise<string> {
    if (this.#report) {
      const r = this.#report();
      this.set(METRIC.apiCalls, {}, r.apiCalls);
      this.set(METRIC.apiRetries, {}, r.retries);
      this.set(METRIC.savedByDedup, {}, r.callsSavedByDedup);
      this.set(METRIC.savedByCache, {}, r.callsSavedByCache);
      this.set(METRIC.savedByStore, {}, r.callsSavedByStore);
      this.set(METRIC.storeHitRate, {}, r.storeHitRate);
      if (r.budget) {
        this.set(METRIC.billableCalls, {}, r.budget.billableCalls);
        this.set(METRIC.maxCalls, {}, r.budget.maxCalls ?? 0);
        this.set(METRIC.budgetShared, {}, r.budget.scope === 'shared' ? 1 : 0);
      }
    }
    return this.#registry.metrics();
  }

  #entry(name: string, labels: Labels): { labels: Labels; value: number } {
    const family = this.#families.get(name);
    if (!family) throw new RangeError(`unknown metric ${name}`);
    const key = seriesKey(labels);
    let entry = family.values.get(key);
    if (!entry) family.values.set(key, (entry = { labels, value: 0 }));
    return entry;
  }
}

// Called on every inc/set: plain concatenation (no JSON, no sort for the usual zero or one label).
function seriesKey(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let key = '';
  for (const name of names) key += `${name}\u0000${labels[name]}\u0001`;
  return key;
}
