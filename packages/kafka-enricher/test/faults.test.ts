import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import { cliArgs, dataset, inputOffsets, killIfRunning, metricsPort, metricValue, produce, readResults, sourceOffsets, spawnEnricher } from './helpers.js';
import type { Running } from './helpers.js';

let kafka: TestKafka;
let sandbox: Sandbox;
let run: Running | undefined;

beforeAll(async () => {
  [kafka, sandbox] = await Promise.all([startKafka(), startSandbox()]);
});
afterAll(async () => {
  killIfRunning(run);
  await Promise.all([kafka?.stop(), sandbox?.close()]);
});

it('dead-letters nothing when the platform answers 503: an outage pauses the partition and 20 % 503s are retried', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(3_000, 0);
  await produce(kafka.brokers, names.input, messages);
  // First a full outage, long enough to exhaust the transport's own retries, then 20 % 503s.
  sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [503] } });
  run = spawnEnricher(cliArgs(kafka.brokers, names, ['--metrics-port', '0']), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  const port = await metricsPort(run);
  await run.waitForLog(/partition paused: records unavailable/, 90_000);
  sandbox.setFaults({ batch: { errorRate: 0.2, errorStatuses: [503] } });

  const inputs = await inputOffsets(kafka.brokers, names.input, 3_000);
  const { outs } = await readResults(kafka.brokers, names, 3_000, 0);
  const covered = sourceOffsets(outs, []);
  expect(inputs.filter((m) => !covered.has(`${m.partition}:${m.offset}`))).toEqual([]);
  expect(await metricValue(port, 'dq_kafka_batch_retries_total')).toBeGreaterThan(0);
  // The transport's own retries of single calls (503s answered on a later attempt).
  expect(await metricValue(port, 'dq_kafka_api_retries_total')).toBeGreaterThan(0);
  expect(await metricValue(port, 'dq_kafka_messages_produced_total')).toBeGreaterThanOrEqual(3_000);
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  expect(metrics).not.toMatch(/^dq_kafka_dlq_messages_total/m);
  const stats = JSON.stringify(sandbox.stats());
  expect(stats).toMatch(/503/);

  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
}, 240_000);
