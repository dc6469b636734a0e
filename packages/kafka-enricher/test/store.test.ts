import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { cliArgs, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import { dataset, killIfRunning, metricsPort, metricValue, produce, readResults, spawnEnricher } from '@dq/test-support/kafka';
import type { Names, Running } from '@dq/test-support/kafka';

let kafka: TestKafka;
let sandbox: Sandbox;
let run: Running | undefined;
let dir: string;

beforeAll(async () => {
  [kafka, sandbox] = await Promise.all([
    startKafka(),
    startSandbox({ config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] } }),
  ]);
  dir = await mkdtemp(join(tmpdir(), 'dq-kafka-store-'));
});
afterAll(async () => {
  killIfRunning(run);
  await Promise.all([kafka?.stop(), sandbox?.close(), rm(dir, { recursive: true, force: true })]);
});

const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

/** Enriches all of `names.input` with a group of its own; returns the outputs, calls paid and metrics. */
async function enrichAll(names: Names, good: number, bad: number, store: string) {
  const before = billable();
  run = spawnEnricher([...cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--store', store])], { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  const port = await metricsPort(run);
  const { outs } = await readResults(kafka.brokers, names, good, bad);
  const metrics = {
    calls: await metricValue(port, 'dq_kafka_api_calls_total'),
    savedByStore: await metricValue(port, 'dq_kafka_calls_saved_by_store_total'),
    hitRate: await metricValue(port, 'dq_kafka_store_hit_rate'),
  };
  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
  return { outs, paid: billable() - before, metrics };
}

describe('dq-kafka with the result store', () => {
  it('a second consumer group over the same topic pays nothing and writes the stored request ids and check times', { timeout: 300_000 }, async () => {
    const input = uniqueTopic('in');
    const { messages, bad } = dataset(1_000, 20);
    await produce(kafka.brokers, input, messages);
    const store = join(dir, 'store');
    const names = (): Names => ({ input, output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() });
    const good = 1_000 - bad.size;

    const first = await enrichAll(names(), good, bad.size, store);
    expect(first.paid).toBeGreaterThan(0);
    const second = await enrichAll(names(), good, bad.size, store);
    expect(second.paid).toBe(0);
    expect(second.metrics).toMatchObject({ calls: 0, hitRate: 1 });
    expect(second.metrics.savedByStore).toBeGreaterThan(0);

    const dqOf = (outs: typeof first.outs) =>
      new Map(outs.map((o) => [o.headers['x-seq'], (JSON.parse(o.value!) as { dq: { requestId?: string; checkedAt?: string } }).dq]));
    const [a, b] = [dqOf(first.outs), dqOf(second.outs)];
    for (const [seq, dq] of b) {
      expect(dq.checkedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(dq.requestId).toBe(a.get(seq)?.requestId);
      expect(dq.checkedAt).toBe(a.get(seq)?.checkedAt);
    }
  });
});
