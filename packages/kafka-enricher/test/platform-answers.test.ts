import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY, generateDirtyInputs, startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import { cliArgs, killIfRunning, metricsPort, metricValue, produce, readResults, spawnEnricher } from './helpers.js';
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

it('enriches a message of a country without reference data with status unsupported-country: output, not DLQ, no pause, no retry', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const [known] = generateDirtyInputs(50, { seed: 7 }).filter((x) => x.intendedClass === 'A' && x.input.postalCode && x.input.locality);
  if (known === undefined) throw new Error('no known address');
  const addresses = [known.input, { street: 'Rue de Rivoli', houseNumber: '99', postalCode: '75001', locality: 'Paris', country: 'FR' }];
  await produce(
    kafka.brokers,
    names.input,
    addresses.map((address, i) => ({ key: 'k', value: JSON.stringify({ id: i, address }) })),
  );
  run = spawnEnricher(cliArgs(kafka.brokers, names, ['--metrics-port', '0']), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  const port = await metricsPort(run);

  const { outs } = await readResults(kafka.brokers, names, 2, 0, 60_000);
  const statuses = new Map(
    outs.map((o) => {
      const value = JSON.parse(o.value!) as { id: number; dq: { status: string } };
      return [value.id, value.dq.status];
    }),
  );
  expect(statuses.get(0)).toBe('accepted');
  expect(statuses.get(1)).toBe('unsupported-country');
  expect(await metricValue(port, 'dq_kafka_api_retries_total')).toBe(0);
  expect(await metricValue(port, 'dq_kafka_batch_retries_total')).toBe(0);
  expect(run.stderr()).not.toContain('partition paused');
  expect(sandbox.stats().requests['batch']?.total).toBe(2);

  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
}, 120_000);
