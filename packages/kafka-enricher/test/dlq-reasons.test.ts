import { afterAll, expect, it } from 'vitest';
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

it('a dead letter produced to the input again: its old dq-* headers are not carried into the output, nor left in a new dead letter', async () => {
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
  await produce(kafka.brokers, names.input, [
    { key: 'k', headers: old, value: value('Lindenweg') },
    { key: 'k', headers: old, value: value(undefined) },
  ]);
  run = spawnEnricher(cliArgs(kafka.brokers, names), sandbox.env());
  const [outs, dead] = await Promise.all([
    readTopic(kafka.brokers, names.output, (all) => all.length >= 1, 60_000),
    readTopic(kafka.brokers, names.dlq, (all) => all.length >= 1, 60_000),
  ]);
  run.child.kill('SIGTERM');
  expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
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
