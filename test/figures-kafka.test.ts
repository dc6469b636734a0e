import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { cliArgs, metricsPort, metricValue, produce, readResults, spawnEnricher, uniqueGroup, uniqueTopic, waitUntilUp } from '@dq/test-support/kafka';
import { useKafka, useSandbox, useTempDir } from '@dq/test-support/use';

// The cost figures of dq-kafka's /metrics and summary (README "The result store", "Spending cap",
// and packages/kafka-enricher/README.md "Metrics") against what the sandbox billed the account:
// real dq-kafka processes, a Kafka-protocol broker, the sandbox over real HTTP.

const ACCOUNT = 'acct';
const dir = useTempDir('dq-figures-kafka-');
const kafka = useKafka();
// No rate limit on the sandbox's side either: the figures, not the pacing, are under test.
const sandbox = useSandbox({ accounts: [{ id: ACCOUNT, apiKeys: ['dq-sandbox-key'], rateLimits: { batch: 0 } }] });

const billed = (): number => sandbox.stats().billable[ACCOUNT] ?? 0;
const requests = (): number => sandbox.stats().requests['batch']?.total ?? 0;

/** `distinct` addresses as JSON messages, the list `copies` times. */
function messages(distinct: number, copies: number): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  for (let c = 0; c < copies; c++)
    for (let i = 0; i < distinct; i++) {
      const address = { street: 'Lindenweg', houseNumber: String(i + 1), postalCode: '10115', locality: 'Berlin', country: 'DE' };
      out.push({ key: `k${i % 50}`, value: JSON.stringify({ id: i, address }) });
    }
  return out;
}

const SERIES = {
  apiCalls: 'dq_kafka_api_calls_total',
  retries: 'dq_kafka_api_retries_total',
  dedup: 'dq_kafka_calls_saved_by_dedup_total',
  cache: 'dq_kafka_calls_saved_by_cache_total',
  store: 'dq_kafka_calls_saved_by_store_total',
  hitRate: 'dq_kafka_store_hit_rate',
  billable: 'dq_kafka_billable_calls_total',
} as const;

/**
 * One dq-kafka instance in a new group over `input` until the output holds `count` messages: its
 * metrics then, and its summary after a SIGTERM.
 */
async function consume(input: string, count: number, store: string): Promise<{ metrics: Record<keyof typeof SERIES, number>; summary: Record<string, any> }> {
  const names = { input, output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const enricher = spawnEnricher(cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--rate-limit', '0', '--store', join(dir, store)]), sandbox.env());
  try {
    const port = await metricsPort(enricher);
    await waitUntilUp(enricher, port);
    await readResults(kafka.brokers, names, count, 0, 120_000);
    const metrics = {} as Record<keyof typeof SERIES, number>;
    for (const [name, series] of Object.entries(SERIES)) metrics[name as keyof typeof SERIES] = await metricValue(port, series);
    enricher.child.kill('SIGTERM');
    const exit = await enricher.exited;
    expect(exit.code, enricher.stderr().slice(-2000)).toBe(0);
    const line = enricher
      .stdout()
      .trim()
      .split('\n')
      .reverse()
      .find((l) => l.includes('"apiCalls"'));
    if (!line) throw new Error(`no summary; stderr: ${enricher.stderr().slice(-2000)}`);
    return { metrics, summary: JSON.parse(line) as Record<string, any> };
  } finally {
    if (enricher.child.exitCode === null && enricher.child.signalCode === null) enricher.child.kill('SIGKILL');
  }
}

describe('dq-kafka: the cost figures against what the account is billed', () => {
  it('repeated inputs are paid once, metrics and summary agree with the bill, and a second group pays nothing', async () => {
    const input = uniqueTopic('in');
    await produce(kafka.brokers, input, messages(300, 2));
    let before = billed();
    const first = await consume(input, 600, 'store-dups');
    expect(billed() - before).toBe(300);
    expect(first.metrics).toMatchObject({ apiCalls: 300, retries: 0, billable: 300, store: 0 });
    // Every record is a call made or a call saved, by dedup within a batch or by the cache across batches.
    expect(first.metrics.apiCalls + first.metrics.dedup + first.metrics.cache + first.metrics.store).toBe(600);
    expect({ apiCalls: first.summary.apiCalls, billable: first.summary.budget.billableCalls, records: first.summary.records }).toEqual({
      apiCalls: 300,
      billable: 300,
      records: 600,
    });

    before = billed();
    const second = await consume(input, 600, 'store-dups');
    expect(billed() - before).toBe(0);
    expect(second.metrics).toMatchObject({ apiCalls: 0, billable: 0, store: 600, hitRate: 1 });
    expect({ apiCalls: second.summary.apiCalls, billable: second.summary.budget.billableCalls }).toEqual({ apiCalls: 0, billable: 0 });
  }, 240_000);

  it('503s, resets and truncations: billable calls count every attempt the platform received, apiCalls + retries add up to it', async () => {
    const input = uniqueTopic('in');
    await produce(kafka.brokers, input, messages(400, 1));
    sandbox.setFaults({ batch: { errorRate: 0.2, errorStatuses: [503], resetRate: 0.05, truncateRate: 0.05 } });
    const before = { billed: billed(), requests: requests() };
    let result: Awaited<ReturnType<typeof consume>>;
    try {
      result = await consume(input, 400, 'store-faults');
    } finally {
      sandbox.setFaults({});
    }
    const { metrics, summary } = result;
    // The sandbox counts a request when its response is done, which may be just after the client read it.
    await new Promise((r) => setTimeout(r, 300));
    const received = requests() - before.requests;
    // A batch repeated after unavailable records calls those again: at least one call per input.
    expect(metrics.apiCalls).toBeGreaterThanOrEqual(400);
    expect({ apiCalls: summary.apiCalls, retries: summary.retries, billable: summary.budget.billableCalls }).toEqual({
      apiCalls: metrics.apiCalls,
      retries: metrics.retries,
      billable: metrics.billable,
    });
    expect(metrics.billable).toBe(received);
    expect(metrics.apiCalls + metrics.retries).toBe(metrics.billable);
    expect(billed() - before.billed).toBeLessThan(metrics.billable);
  }, 240_000);
});
