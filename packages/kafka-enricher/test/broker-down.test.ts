import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';
import { cliArgs, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import { useSandbox } from '@dq/test-support/use';
import { dataset, killIfRunning, metricsPort, produce, readTopic, spawnEnricher } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

// The cluster goes away for good under a running dq-kafka (this file's own mock cluster, stopped
// mid-test): the run must end with exit 75 and a line saying what to check, not go on restarting
// its consumer forever while /healthz reports a healthy consumer.

const sandbox = useSandbox();
let kafka: TestKafka | undefined;
let run: Running | undefined;
afterAll(async () => {
  killIfRunning(run);
  await kafka?.stop();
});

it('brokers gone mid-run: /healthz turns 503, then exit 75 naming the brokers and saying what to check', async () => {
  kafka = await startKafka();
  const brokers = kafka.brokers;
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(brokers, names.input, dataset(20, 0).messages);
  run = spawnEnricher(cliArgs(brokers, names, ['--metrics-port', '0']), sandbox.env());
  const port = await metricsPort(run);
  // Everything delivered: the consumer is idle in a joined group when the cluster goes away.
  await readTopic(brokers, names.output, (all) => all.length >= 20, 60_000);
  expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  await kafka.stop();

  // kafkajs gives up on its fetches after about 10 s of retries.
  let health = 200;
  for (const until = Date.now() + 60_000; health === 200 && Date.now() < until; await sleep(1000)) {
    health = (await fetch(`http://127.0.0.1:${port}/healthz`)).status;
  }
  expect(health, '/healthz 60 s after the brokers went away').toBe(503);
  const exited = await Promise.race([run.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 150_000))]);
  const stderr = run.stderr();
  expect(exited, stderr.slice(-2000)).toEqual({ code: 75, signal: null });
  const brokerList = brokers.join(',').replace(/\./g, '\\.');
  expect(stderr).toMatch(
    new RegExp(
      `^dq-kafka: kafka-failure: the Kafka consumer stopped and 5 restarts in a row did not bring it back: .*ECONNREFUSED.*; check that the brokers \\(${brokerList}\\) are up and reachable, then restart dq-kafka \\(uncommitted messages are re-read\\)$`,
      'm',
    ),
  );
  expect(JSON.parse(run.stdout().trim().split('\n').at(-1)!)).toMatchObject({ exitCode: 75, reason: 'fatal', error: { code: 'kafka-failure' } });
  expectNoStackTrace(stderr);
}, 240_000);

it('a --brokers address nothing listens on: exit 75 naming the address and the flag to check, and the log shows no stack trace', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  run = spawnEnricher(cliArgs(['127.0.0.1:1'], names), sandbox.env());
  const exited = await run.exited;
  const stderr = run.stderr();
  expect(exited, stderr.slice(-2000)).toEqual({ code: 75, signal: null });
  expect(stderr).toMatch(
    /^dq-kafka: kafka-failure: the Kafka admin client could not connect: Connection error: connect ECONNREFUSED 127\.0\.0\.1:1; check --brokers, TLS and SASL settings$/m,
  );
  // kafkajs logs each failed connection attempt; those lines say what failed, without its stack.
  expect(stderr).toMatch(/"component":"kafkajs","msg":"Connection error: connect ECONNREFUSED 127\.0\.0\.1:1"/);
  expectNoStackTrace(stderr);
}, 60_000);

function expectNoStackTrace(stderr: string): void {
  expect(stderr).not.toMatch(/"stack"|\n\s+at |\\n\s+at /);
}
