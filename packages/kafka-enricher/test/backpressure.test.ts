import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import { cliArgs, dataset, killIfRunning, metricsPort, metricValue, produce, readResults, spawnEnricher } from './helpers.js';
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

it('pauses partitions instead of taking more than --max-in-flight messages when the platform is slow', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, names.input, dataset(3_000, 0).messages);
  sandbox.setFaults({ batch: { latencyMs: 300 } });
  run = spawnEnricher(cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--max-in-flight', '200', '--batch-size', '50']), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  const port = await metricsPort(run);
  let maxInFlight = 0;
  let maxPaused = 0;
  const reading = readResults(kafka.brokers, names, 3_000, 0);
  let finished = false;
  void reading.finally(() => (finished = true));
  while (!finished) {
    maxInFlight = Math.max(maxInFlight, await metricValue(port, 'dq_kafka_in_flight_messages'));
    maxPaused = Math.max(maxPaused, await metricValue(port, 'dq_kafka_paused_partitions'));
    await new Promise((r) => setTimeout(r, 50));
  }
  await reading;
  expect(maxInFlight).toBeGreaterThan(0);
  expect(maxInFlight).toBeLessThanOrEqual(200);
  expect(maxPaused).toBeGreaterThan(0);
  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
}, 180_000);
