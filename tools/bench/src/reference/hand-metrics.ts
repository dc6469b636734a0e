// dq-kafka's hand-written Prometheus exposition before prom-client (kept as the benchmark's reference only).
import type { RunReport } from '@dq/core/engine';

type Labels = Readonly<Record<string, string>>;

interface Family {
  help: string;
  type: 'counter' | 'gauge';
  values: Map<string, { labels: Labels; value: number }>;
}

/** Names of the metric families dq-kafka exports (README "Metrics"). */
export const METRIC = {
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
  savedByStore: 'dq_kafka_calls_saved_by_store_total',
  storeHitRate: 'dq_kafka_store_hit_rate',
  up: 'dq_kafka_up',
  billableCalls: 'dq_kafka_billable_calls_total',
  maxCalls: 'dq_kafka_max_calls',
  budgetShared: 'dq_kafka_rate_budget_shared',
} as const;

const HELP: Record<(typeof METRIC)[keyof typeof METRIC], [Family['type'], string]> = {
  [METRIC.consumed]: ['counter', 'Input messages taken from the input topic (redeliveries included).'],
  [METRIC.produced]: ['counter', 'Enriched messages acknowledged by the output topic.'],
  [METRIC.dlq]: ['counter', 'Messages acknowledged by the dead-letter topic, by reason code.'],
  [METRIC.records]: ['counter', 'Records answered by the platform, by status.'],
  [METRIC.classes]: ['counter', 'Address results by result class (A-F).'],
  [METRIC.lag]: ['gauge', 'High watermark minus the next offset to commit, per input partition (messages).'],
  [METRIC.inFlight]: ['gauge', 'Messages taken from Kafka whose offsets are not yet committed.'],
  [METRIC.paused]: ['gauge', 'Input partitions paused for backpressure or a transient failure.'],
  [METRIC.commits]: ['counter', 'Offset commits that succeeded.'],
  [METRIC.batchRetries]: ['counter', 'Batches repeated because records came back unavailable (5xx, timeouts, 429).'],
  [METRIC.apiCalls]: ['counter', 'Distinct requests sent to the platform.'],
  [METRIC.apiRetries]: ['counter', 'Repeated HTTP attempts made by the transport (429, 5xx, timeouts).'],
  [METRIC.savedByDedup]: ['counter', 'Records answered by sharing the call of an identical input.'],
  [METRIC.savedByStore]: ['counter', 'Records answered from the result store (answers bought earlier).'],
  [METRIC.storeHitRate]: ['gauge', 'Share of the inputs looked up in the result store that it answered.'],
  [METRIC.up]: ['gauge', '1 while the consumer is in its group and consuming, else 0.'],
  [METRIC.billableCalls]: ['counter', 'HTTP calls sent to billable endpoints (retries included), counted against --max-calls.'],
  [METRIC.maxCalls]: ['gauge', 'The spending cap --max-calls (0: none); the process stops with exit 5 before exceeding it.'],
  [METRIC.budgetShared]: ['gauge', "1 when the rate budget is shared by every process of the account (Postgres), 0 when it is this process's own."],
};

/** Counters and gauges of one dq-kafka process, rendered in the Prometheus text format 0.0.4. */
export class Metrics {
  readonly #families = new Map<string, Family>();
  #report: (() => RunReport) | undefined;

  constructor() {
    for (const [name, [type, help]] of Object.entries(HELP)) this.#families.set(name, { type, help, values: new Map() });
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

  /** The exposition text. */
  render(): string {
    if (this.#report) {
      const r = this.#report();
      this.set(METRIC.apiCalls, {}, r.apiCalls);
      this.set(METRIC.apiRetries, {}, r.retries);
      this.set(METRIC.savedByDedup, {}, r.callsSavedByDedup);
      this.set(METRIC.savedByStore, {}, r.callsSavedByStore);
      this.set(METRIC.storeHitRate, {}, r.storeHitRate);
      if (r.budget) {
        this.set(METRIC.billableCalls, {}, r.budget.billableCalls);
        this.set(METRIC.maxCalls, {}, r.budget.maxCalls ?? 0);
        this.set(METRIC.budgetShared, {}, r.budget.scope === 'shared' ? 1 : 0);
      }
    }
    const lines: string[] = [];
    for (const [name, family] of this.#families) {
      lines.push(`# HELP ${name} ${family.help}`, `# TYPE ${name} ${family.type}`);
      for (const { labels, value } of family.values.values()) lines.push(`${name}${formatLabels(labels)} ${value}`);
    }
    return `${lines.join('\n')}\n`;
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

function seriesKey(labels: Labels): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function formatLabels(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}
