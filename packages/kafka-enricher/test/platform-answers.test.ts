import { afterAll, expect, it } from 'vitest';
import { generateDirtyInputs } from '@dq/sandbox';
import { cliArgs, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { killIfRunning, metricsPort, metricValue, produce, readResults, spawnEnricher } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => killIfRunning(run));

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
  run = spawnEnricher(cliArgs(kafka.brokers, names, ['--metrics-port', '0']), sandbox.env());
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

it('stops on a refused API key (401) with one line that gives the request id once and never the key', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, names.input, [
    { key: 'k', value: JSON.stringify({ id: 0, address: { street: 'Lindenweg', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' } }) },
  ]);
  const wrongKey = 'wrong-key-Zq81x7';
  run = spawnEnricher(cliArgs(kafka.brokers, names), { ...sandbox.env(), DQ_API_KEY: wrongKey });
  const { code } = await run.exited;
  expect(code).toBe(3);
  const line = run
    .stderr()
    .split('\n')
    .find((l) => l.startsWith('dq-kafka: '));
  expect(line).toMatch(
    /^dq-kafka: api-key-invalid: API Key Invalid \[api-key-invalid, HTTP 401, request id [\w-]+\]; check the API key in the customer portal; fix the key, account, plan or quota, then restart$/,
  );
  const summary = JSON.parse(run.stdout().trim().split('\n').at(-1)!) as { error: { message: string; requestId: string } };
  for (const message of [line!, summary.error.message]) expect(message.split(summary.error.requestId).length - 1, message).toBe(1);
  expect(run.stderr() + run.stdout()).not.toContain(wrongKey);
}, 120_000);
