import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { cliArgs, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import {
  dataset,
  inputOffsets,
  killIfRunning,
  metricsPort,
  metricValue,
  produceOverTime,
  readResults,
  sourceOffsets,
  spawnEnricher,
} from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

let kafka: TestKafka;
let sandbox: Sandbox;
const runs: Running[] = [];

beforeAll(async () => {
  [kafka, sandbox] = await Promise.all([startKafka(), startSandbox()]);
});
afterAll(async () => {
  runs.forEach(killIfRunning);
  await Promise.all([kafka?.stop(), sandbox?.close()]);
});

it('loses no message when one of two instances in a group is killed with SIGKILL mid-stream', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(10_000, 20);
  const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
  const args = cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--batch-size', '100']);
  await produceOverTime(kafka.brokers, names.input, messages.slice(0, 1000), 1, 0);
  // Members join one after the other: the mock cluster answers a SyncGroup of two simultaneous
  // first joins with INVALID_REQUEST.
  const a = spawnEnricher(args, env);
  runs.push(a);
  const portA = await metricsPort(a);
  await a.waitForLog(/partitions assigned/);
  const b = spawnEnricher(args, env);
  runs.push(b);
  await Promise.all([a.waitForLog(/partitions assigned[^]*partitions assigned/), b.waitForLog(/partitions assigned/)]);

  const producing = produceOverTime(kafka.brokers, names.input, messages.slice(1000), 18, 6_000);
  // Kill A only once it has done work of its own, while the stream is still coming in.
  for (let i = 0; i < 200 && (await metricValue(portA, 'dq_kafka_messages_produced_total')) === 0; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await metricValue(portA, 'dq_kafka_messages_produced_total')).toBeGreaterThan(0);
  a.child.kill('SIGKILL');
  expect((await a.exited).signal).toBe('SIGKILL');
  await producing;

  const inputs = await inputOffsets(kafka.brokers, names.input, 10_000);
  const { outs, dead } = await readResults(kafka.brokers, names, 9_500, 500);
  const covered = sourceOffsets(outs, dead);
  expect(inputs.map((m) => `${m.partition}:${m.offset}`).filter((k) => !covered.has(k))).toEqual([]);
  b.child.kill('SIGTERM');
  expect((await b.exited).code).toBe(0);
}, 240_000);
