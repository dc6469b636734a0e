import { afterAll, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { cliArgs, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { dataset, killIfRunning, MAP, produce, readTopic, spawnEnricher } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => killIfRunning(run));

/** How often `part` occurs in `text`. */
const count = (text: string, part: string): number => text.split(part).length - 1;

it('dead-letters invalid input with a reason that names its offset and each refused field once, and what to correct', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const address = (country: string, no: string): string =>
    JSON.stringify({ address: { street: 'Lindenweg', houseNumber: no, postalCode: '10115', locality: 'Berlin', country } });
  // One key: one partition, offsets 0, 1, 2 in this order.
  await produce(kafka.brokers, names.input, [
    { key: 'k', value: address('DE', '1') },
    // Refused before any call: not a country code.
    { key: 'k', value: address('Germany', '2') },
    // A well-formed code the platform refuses with a 400 field error.
    { key: 'k', value: address('ZZ', '3') },
  ]);
  run = spawnEnricher(cliArgs(kafka.brokers, names, ['--store', 'off']), sandbox.env());
  const dead = await readTopic(kafka.brokers, names.dlq, (all) => all.length >= 2, 60_000);
  run.child.kill('SIGTERM');
  expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });

  const byCode = new Map(dead.map((d) => [d.headers['dq-error-code'], d.headers]));
  expect([...byCode.keys()].sort()).toEqual(['field-error', 'local-validation']);

  const local = byCode.get('local-validation')!;
  expect(local['dq-original-offset']).toBe('1');
  expect(local['dq-error-message']).toMatch(/^offset 1: refused before sending, nothing was paid: country: must be two upper-case letters .*"GERMANY"/);
  expect(local['dq-error-message']).toMatch(/; correct these fields of the message, or --map if it reads them from the wrong member$/);
  expect(local['dq-error-message']).not.toMatch(/column/);

  const refused = byCode.get('field-error')!;
  expect(refused['dq-original-offset']).toBe('2');
  const requestId = refused['dq-request-id']!;
  expect(requestId).toBeTruthy();
  const message = refused['dq-error-message']!;
  expect(message).toMatch(new RegExp(`^offset 2: Field Validation Error \\[field-error, HTTP 400, request id ${requestId}\\]; fields: country \\(`));
  // The platform's words for the field, said once.
  const violation = /fields: country \((.+?)\);/.exec(message)![1]!;
  expect(count(message, violation)).toBe(1);
  // A message was read with --map: nothing to hint at.
  expect(run.stderr()).not.toMatch(/hint/);
}, 120_000);

it('a --map pointer with a typo: the whole topic goes to the DLQ, and one hint line says --map reads nothing and what to do', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const N = 80;
  await produce(kafka.brokers, names.input, dataset(N, 0).messages);
  const typo = MAP.replace('street=/address/street', 'street=/adress/street');
  run = spawnEnricher(cliArgs(kafka.brokers, names, [], typo), sandbox.env());
  const dead = await readTopic(kafka.brokers, names.dlq, (all) => all.length >= N, 60_000);
  expect(new Set(dead.map((d) => d.headers['dq-error-code']))).toEqual(new Set(['missing-field']));
  await run.waitForLog(/^dq-kafka: hint:/m, 10_000);
  run.child.kill('SIGTERM');
  expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
  const hints = run.stderr().match(/^dq-kafka: hint: .*$/gm);
  expect(hints).toEqual([
    'dq-kafka: hint: none of the first 50 messages could be read with --map, so each went to the DLQ: mapped field street (/adress/street) is missing or empty in 50. ' +
      'If --map is wrong, stop dq-kafka, correct it and produce the dead letters to the input topic again (each names its input offset)',
  ]);
}, 120_000);

/** The first `count` messages of `topics`, from the start: topic, partition, headers and timestamp. */
async function readStamped(
  brokers: string[],
  topics: string[],
  count: number,
): Promise<Array<{ topic: string; partition: number; headers: Record<string, string>; timestamp: string }>> {
  const consumer = new Kafka({ brokers, clientId: 'dq-test', logLevel: logLevel.NOTHING }).consumer({ groupId: uniqueGroup('reader'), sessionTimeout: 6000 });
  const all: Array<{ topic: string; partition: number; headers: Record<string, string>; timestamp: string }> = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${all.length} of ${count} messages in 60 s`)), 60_000);
      void consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
          all.push({ topic, partition, headers, timestamp: message.timestamp });
          if (all.length >= count) resolve(clearTimeout(timer));
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return all;
}

it('a dead letter produced to the input again: its old dq-* headers are not carried into the output, nor left in a new dead letter; both keep the input timestamp', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  // What the DLQ held for a 400, re-driven by hand after the input was corrected (or not).
  const old = {
    'dq-error-code': 'field-error',
    'dq-error-message': 'offset 7: Field Validation Error',
    'dq-original-topic': 'orders-2024',
    'dq-original-partition': '3',
    'dq-original-offset': '7',
    'dq-request-id': 'req-from-last-week',
    'x-seq': '1',
  };
  const value = (street: string | undefined): string =>
    JSON.stringify({ address: { street, houseNumber: '9', postalCode: '10115', locality: 'Berlin', country: 'DE' } });
  // Event times of last week: the output and the dead letter carry them, not the time of the send.
  const [t0, t1] = [String(Date.now() - 7 * 86_400_000), String(Date.now() - 6 * 86_400_000)];
  await produce(kafka.brokers, names.input, [
    { key: 'k', headers: old, value: value('Lindenweg'), timestamp: t0 },
    { key: 'k', headers: old, value: value(undefined), timestamp: t1 },
  ]);
  run = spawnEnricher(cliArgs(kafka.brokers, names), sandbox.env());
  const read = await readStamped(kafka.brokers, [names.output, names.dlq], 2);
  run.child.kill('SIGTERM');
  expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
  const outs = read.filter((r) => r.topic === names.output);
  const dead = read.filter((r) => r.topic === names.dlq);
  expect(outs.map((o) => o.timestamp)).toEqual([t0]);
  expect(dead.map((d) => d.timestamp)).toEqual([t1]);
  expect(outs[0]!.headers).toEqual({ 'x-seq': '1' });
  expect(dead[0]!.headers).toEqual({
    'x-seq': '1',
    'dq-error-code': 'missing-field',
    'dq-error-message': 'offset 1: mapped field street (/address/street) is missing or empty',
    'dq-original-topic': names.input,
    'dq-original-partition': dead[0]!.partition.toString(),
    'dq-original-offset': '1',
  });
}, 120_000);

it('a tombstone (a keyed message without a value) is passed on to the output with its key, headers and timestamp, so a compacted output deletes the key too; one without a key is dead-lettered', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const address = JSON.stringify({ address: { street: 'Lindenweg', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' } });
  const timestamp = String(Date.parse('2026-01-02T03:04:05Z'));
  await produce(kafka.brokers, names.input, [
    { key: 'customer-1', value: address },
    { key: 'customer-1', value: null, headers: { op: 'delete' }, timestamp },
    { key: null, value: null },
  ]);
  run = spawnEnricher(cliArgs(kafka.brokers, names, ['--store', 'off']), sandbox.env());
  const out = await readTopic(kafka.brokers, names.output, (all) => all.length >= 2, 60_000);
  const dead = await readTopic(kafka.brokers, names.dlq, (all) => all.length >= 1, 30_000);
  run.child.kill('SIGTERM');
  expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
  // In input order on the key's partition: the enriched record, then its deletion.
  expect(out.map((m) => [m.key, m.value === null ? null : (JSON.parse(m.value) as { dq: { status: string } }).dq.status])).toEqual([
    ['customer-1', 'accepted'],
    ['customer-1', null],
  ]);
  expect(out[1]!.headers).toEqual({ op: 'delete' });
  const kafkaRead = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING }).consumer({ groupId: `ts-${names.group}` });
  await kafkaRead.connect();
  try {
    await kafkaRead.subscribe({ topic: names.output, fromBeginning: true });
    const stamps: string[] = [];
    await new Promise<void>((resolve) => {
      void kafkaRead.run({
        eachMessage: async ({ message }) => {
          if (message.value === null) stamps.push(message.timestamp);
          if (stamps.length > 0) resolve();
        },
      });
    });
    expect(stamps).toEqual([timestamp]);
  } finally {
    await kafkaRead.disconnect();
  }
  // Without a key, the message went to a partition of the producer's choosing.
  expect(dead.map((d) => [d.key, d.headers['dq-error-code']])).toEqual([[null, 'empty-value']]);
  const offset = dead[0]!.headers['dq-original-offset'];
  expect(dead[0]!.headers['dq-error-message']).toBe(`offset ${offset}: the message has no value and no key (a tombstone deletes a key: it needs one)`);
}, 120_000);
