import { afterAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY, generateDirtyInputs } from '@dq/sandbox';
import type { Message } from 'kafkajs';
import { cliArgs, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { killIfRunning, metricsPort, metricValue, produce, readResults, spawnEnricher } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

const kafka = useKafka();
// No rate limit on either side: only --max-in-flight may hold the calls back.
const sandbox = useSandbox({ accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] });
let run: Running | undefined;
afterAll(() => killIfRunning(run));

/** `n` messages with `n` distinct addresses (one call each: nothing is answered from the cache). */
function distinctMessages(n: number): Message[] {
  const pool = generateDirtyInputs(200, { seed: 7 }).filter((x) => x.input.street && x.input.houseNumber && x.input.postalCode && x.input.locality);
  return Array.from({ length: n }, (_, i) => ({
    key: `k${i % 50}`,
    value: JSON.stringify({ id: i, address: { ...pool[i % pool.length]!.input, houseNumber: String(i + 1) } }),
  }));
}

it('holds partitions back instead of taking more than --max-in-flight messages when the platform is slow: the platform never sees more calls at once, and no message is fetched twice', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, names.input, distinctMessages(3_000));
  sandbox.setFaults({ batch: { latencyMs: 300 } });
  sandbox.resetStats();
  // Calls in flight are limited by nothing but --max-in-flight: the engine would send 600 at once
  // (4 partitions × 3 chunks of 50 answered ahead) and allows 1,000.
  run = spawnEnricher(
    cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--max-in-flight', '200', '--batch-size', '50', '--concurrency', '1000', '--rate-limit', '0']),
    sandbox.env(),
  );
  const port = await metricsPort(run);
  let maxPaused = 0;
  const reading = readResults(kafka.brokers, names, 3_000, 0);
  let finished = false;
  void reading.finally(() => (finished = true));
  while (!finished) {
    maxPaused = Math.max(maxPaused, await metricValue(port, 'dq_kafka_paused_partitions'));
    await new Promise((r) => setTimeout(r, 50));
  }
  await reading;
  sandbox.setFaults({});
  // Measured by the platform: calls it was answering at the same moment.
  const concurrent = sandbox.stats().concurrent['batch'];
  expect(sandbox.stats().requests['batch']?.total).toBeGreaterThanOrEqual(3_000);
  expect(concurrent?.max).toBeLessThanOrEqual(200);
  // The budget was used, so the bound above was tested, not idle.
  expect(concurrent?.max).toBeGreaterThan(100);
  expect(maxPaused).toBeGreaterThan(0);
  // Held back, not paused: kafkajs drops the fetched rest of a paused partition's batch and fetches
  // it again after the resume; waiting keeps it, so each message comes from Kafka once.
  expect(await metricValue(port, 'dq_kafka_messages_consumed_total')).toBe(3_000);
  expect(await metricValue(port, 'dq_kafka_messages_fetched_total')).toBe(3_000);
  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
}, 180_000);
