import { afterEach, expect, it } from 'vitest';
import { killIfRunning, produce, readResults, requiredArgs, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { errorLines, exitWithin } from './exit.js';
import { createTopics, listTopics } from './topics.js';
import { editDistance } from '@dq/core/cli';
import { nearest } from '../src/topics.js';

// A typo in a topic name, on brokers that create topics on first use (the mock cluster does):
// dq-kafka must refuse it at start (exit 2, one line naming the topic and the nearest existing
// names), never create it and wait on an empty topic or fill a new one.

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterEach(() => killIfRunning(run));

const ADDRESS = { street: 'Lindenweg', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' };

it('refuses an --input topic that does not exist with exit 2, naming the existing topic one typo away, and creates none', async () => {
  const suffix = uniqueTopic('');
  const names = { input: `custmers${suffix}`, output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, `customers${suffix}`, [{ key: 'k', value: JSON.stringify({ address: ADDRESS }) }]);
  await createTopics(kafka.brokers, [names.output, names.dlq]);

  run = spawnEnricher(requiredArgs(kafka.brokers, names), sandbox.env());
  expect(await exitWithin(run, 30_000)).toBe(2);
  expect(errorLines(run)).toEqual([
    `dq-kafka: topic-missing: --input topic "custmers${suffix}" does not exist on the brokers (nearest existing: "customers${suffix}"); correct --input, or create the topic, then start again`,
  ]);
  expect(run.stderr()).not.toMatch(/^\s+at /m);
  expect(await listTopics(kafka.brokers)).not.toContain(names.input);
}, 60_000);

it('refuses missing --output and --dlq topics with exit 2 unless --create-topics is given, and creates neither', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, names.input, [{ key: 'k', value: JSON.stringify({ address: ADDRESS }) }]);

  run = spawnEnricher(requiredArgs(kafka.brokers, names), sandbox.env());
  expect(await exitWithin(run, 30_000)).toBe(2);
  expect(errorLines(run)).toEqual([
    `dq-kafka: topic-missing: --output topic "${names.output}" does not exist on the brokers; --dlq topic "${names.dlq}" does not exist on the brokers; correct --output and --dlq, create the topics, or pass --create-topics to have the brokers create them, then start again`,
  ]);
  const topics = await listTopics(kafka.brokers);
  expect(topics).not.toContain(names.output);
  expect(topics).not.toContain(names.dlq);
  expect(sandbox.stats().requests['batch']?.total ?? 0).toBe(0);
}, 60_000);

it('with --create-topics creates the missing output and DLQ topics at start and delivers to them', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, names.input, [
    { key: 'k', value: JSON.stringify({ address: ADDRESS }) },
    { key: 'k', value: 'not json' },
  ]);

  run = spawnEnricher([...requiredArgs(kafka.brokers, names), '--create-topics', '--session-timeout-ms', '6000'], sandbox.env());
  await run.waitForLog(/"msg":"consuming"/, 30_000);
  const topics = await listTopics(kafka.brokers);
  expect(topics).toContain(names.output);
  expect(topics).toContain(names.dlq);
  const { outs, dead } = await readResults(kafka.brokers, names, 1, 1, 60_000);
  expect(outs).toHaveLength(1);
  expect(dead).toHaveLength(1);
  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
}, 120_000);

it('names as nearest only existing topics at most two edits away, nearest first, internal ones left out', () => {
  const existing = ['customers', 'customer', 'orders', '__consumer_offsets', 'custom', 'cust0mers.v2'];
  expect(nearest('custmers', existing)).toEqual(['customers', 'customer']);
  expect(nearest('payments', existing)).toEqual([]);
  expect(editDistance('custmers', 'custom', 2)).toBe(3);
});
