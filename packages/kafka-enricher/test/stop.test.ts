import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { cliArgs, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import {
  commitAudit,
  committedButMissing,
  committedOffsets,
  dataset,
  inputOffsets,
  killIfRunning,
  metricsPort,
  metricValue,
  produce,
  produceOverTime,
  readResults,
  readTopic,
  sourceOffsets,
  spawnEnricher,
} from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

const QUOTA_KEY = 'dq-small-quota-key';
let kafka: TestKafka;
let sandbox: Sandbox;
const runs: Running[] = [];

beforeAll(async () => {
  [kafka, sandbox] = await Promise.all([
    startKafka(),
    startSandbox({
      config: {
        accounts: [
          { id: 'sandbox', apiKeys: [DEFAULT_API_KEY], plan: { quota: 1_000_000_000, validUntil: null } },
          { id: 'small', apiKeys: [QUOTA_KEY], plan: { quota: 40, validUntil: null } },
        ],
      },
    }),
  ]);
});
afterAll(async () => {
  runs.forEach(killIfRunning);
  await Promise.all([kafka?.stop(), sandbox?.close()]);
});

it('drains on SIGTERM mid-stream: exits 0 within the drain bound, commits only delivered offsets, and a restart finishes the rest', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(6_000, 20);
  const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
  const args = cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--drain-timeout-ms', '5000', '--batch-size', '100']);
  await produce(kafka.brokers, names.input, messages.slice(0, 500));
  const first = spawnEnricher(args, env);
  runs.push(first);
  const port = await metricsPort(first);
  const producing = produceOverTime(kafka.brokers, names.input, messages.slice(500), 10, 5_000);
  for (let i = 0; i < 300 && (await metricValue(port, 'dq_kafka_messages_produced_total')) === 0; i++) await new Promise((r) => setTimeout(r, 100));
  const signalled = Date.now();
  first.child.kill('SIGTERM');
  expect(await first.exited).toEqual({ code: 0, signal: null });
  expect(Date.now() - signalled).toBeLessThan(5_000 + 15_000);
  expect(first.stderr()).toMatch(/"msg":"draining/);
  await producing;

  const inputs = await inputOffsets(kafka.brokers, names.input, 6_000);
  const committed = await committedOffsets(kafka.brokers, names.group, names.input);
  expect([...committed.values()].some((o) => o > 0n)).toBe(true);
  // Everything delivered so far: read both topics to their current end.
  const [partialOuts, partialDlq] = await Promise.all([
    readTopic(kafka.brokers, names.output, () => false, 10_000),
    readTopic(kafka.brokers, names.dlq, () => false, 10_000),
  ]);
  expect(committedButMissing(committed, inputs, sourceOffsets(partialOuts, partialDlq))).toEqual([]);

  const second = spawnEnricher(args, env);
  runs.push(second);
  const { outs, dead } = await readResults(kafka.brokers, names, 5_700, 300);
  const covered = sourceOffsets(outs, dead);
  expect(inputs.filter((m) => !covered.has(`${m.partition}:${m.offset}`))).toEqual([]);
  second.child.kill('SIGTERM');
  expect((await second.exited).code).toBe(0);
}, 240_000);

it('exits 75 when SIGTERM finds the platform slower than --drain-timeout-ms, committing nothing past what was delivered', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(1_500, 0);
  const drainTimeoutMs = 2_000;
  const args = cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--drain-timeout-ms', String(drainTimeoutMs), '--batch-size', '100']);
  await produce(kafka.brokers, names.input, messages.slice(0, 500));
  const run = spawnEnricher(args, { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  runs.push(run);
  const port = await metricsPort(run);
  try {
    for (let i = 0; i < 600 && (await metricValue(port, 'dq_kafka_messages_produced_total')) < 500; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await metricValue(port, 'dq_kafka_messages_produced_total')).toBe(500);
    // The platform now answers after 60 s, far past the drain timeout; more messages arrive, with
    // house numbers not seen before (the engine answers repeated addresses from its cache).
    sandbox.setFaults({ batch: { latencyMs: 60_000 }, validate: { latencyMs: 60_000 } });
    const unseen = messages.slice(500).map((m, i) => {
      const value = JSON.parse(String(m.value)) as { address: Record<string, unknown> };
      value.address['houseNumber'] = String(1000 + i);
      return { ...m, value: JSON.stringify(value) };
    });
    await produce(kafka.brokers, names.input, unseen);
    for (let i = 0; i < 600 && (await metricValue(port, 'dq_kafka_in_flight_messages')) === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await metricValue(port, 'dq_kafka_in_flight_messages')).toBeGreaterThan(0);
    const signalled = Date.now();
    run.child.kill('SIGTERM');
    expect(await run.exited).toEqual({ code: 75, signal: null });
    // Leaving the group and closing the clients take a few seconds on a loaded machine.
    expect(Date.now() - signalled).toBeLessThan(drainTimeoutMs + 15_000);
  } finally {
    sandbox.setFaults({});
  }
  expect(JSON.parse(run.stdout().trim().split('\n').pop()!)).toMatchObject({ exitCode: 75, reason: 'drain-timeout', error: { code: 'drain-timeout' } });
  expect(run.stderr()).toMatch(/dq-kafka: drain-timeout: the drain did not finish within --drain-timeout-ms 2000: \d+ messages/);

  const audit = await commitAudit(kafka.brokers, names, 1_500);
  expect(audit.missing).toEqual([]);
  // The first 500 were delivered and committed; the ones the platform never answered were not.
  expect(audit.delivered).toBeGreaterThanOrEqual(500);
  expect(audit.delivered).toBeLessThan(1_500);
  expect(audit.committed).toBeGreaterThanOrEqual(500);
  expect(audit.committed).toBeLessThan(1_500);
}, 180_000);

it('exits 3 on an exhausted quota without committing offsets it did not deliver', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(2_000, 0);
  await produce(kafka.brokers, names.input, messages);
  const run = spawnEnricher(cliArgs(kafka.brokers, names, ['--batch-size', '50']), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: QUOTA_KEY });
  runs.push(run);
  const exit = await run.exited;
  expect(exit.code).toBe(3);
  expect(JSON.parse(run.stdout().trim().split('\n').pop()!)).toMatchObject({ exitCode: 3, reason: 'fatal', error: { code: 'quota-exhausted' } });
  expect(run.stderr()).not.toContain(QUOTA_KEY);

  const inputs = await inputOffsets(kafka.brokers, names.input, 2_000);
  const committed = await committedOffsets(kafka.brokers, names.group, names.input);
  const outs = await readTopic(kafka.brokers, names.output, () => false, 8_000);
  const covered = sourceOffsets(outs, []);
  expect(committedButMissing(committed, inputs, covered)).toEqual([]);
  const committedCount = [...committed.values()].reduce((n, o) => n + (o > 0n ? Number(o) : 0), 0);
  expect(committedCount).toBeLessThan(2_000);
}, 180_000);
