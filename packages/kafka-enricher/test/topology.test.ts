import { afterEach, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { cliArgs, committedOffsets, dataset, killIfRunning, produce, readTopic, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Names, Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox, useTempDir } from '@dq/test-support/use';
import { errorLines, exitWithin } from './exit.js';
import { parseFieldMap } from '../src/field-map.js';
import { settingsDiffer, settingsMetadata } from '../src/group-settings.js';
import { resolveEnricherOptions } from '../src/options.js';
import { outOfRange } from '../src/start-position.js';

// Changes an operator or the cluster makes to the topics and the group between runs (README
// "Committed offsets"). librdkafka's mock cluster has no CreatePartitions, DeleteTopics,
// DeleteRecords or DescribeGroups (so no admin setOffsets): offsets are set as an operator's tool
// does, by a consumer of the group committing them.

const kafka = useKafka();
const sandbox = useSandbox();
const store = useTempDir('dq-kafka-topology-');
const runs: Running[] = [];
afterEach(() => runs.splice(0).forEach(killIfRunning));

const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

/** Waits until `names.group` has committed all `n` messages of `names.input` (each committed only once delivered). */
async function allCommitted(names: Names, n: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const committed = await committedOffsets(kafka.brokers, names.group, names.input);
    if ([...committed.values()].reduce((sum, o) => sum + (o > 0n ? o : 0n), 0n) === BigInt(n)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`group ${names.group} did not commit ${n} messages`);
}

/** Commits `offsets` (partition → offset) of `names.input` for `names.group`, as an operator's reset does; the group must be stopped. */
async function setGroupOffsets(names: Names, offsets: Map<number, bigint>): Promise<void> {
  const consumer = new Kafka({ brokers: kafka.brokers, clientId: 'dq-test-operator', logLevel: logLevel.NOTHING }).consumer({
    groupId: names.group,
    sessionTimeout: 6000,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: names.input });
    // Joined, the consumer fetches nothing: every batch is left unresolved and nothing auto-committed.
    await new Promise<void>((joined) => {
      consumer.on(consumer.events.GROUP_JOIN, () => joined());
      void consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: () => new Promise(() => undefined) });
    });
    const wanted = [...offsets].map(([partition, offset]) => ({ topic: names.input, partition, offset: String(offset) }));
    // The mock cluster drops a commit sent right after the join now and then: repeated until it holds.
    for (let i = 0; i < 20; i++) {
      await consumer.commitOffsets(wanted);
      const now = await committedOffsets(kafka.brokers, names.group, names.input);
      if ([...offsets].every(([p, o]) => now.get(p) === o)) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`the group's offsets did not become ${JSON.stringify(wanted)}`);
  } finally {
    await consumer.disconnect();
  }
}

it('a committed offset past the end of the input (a recreated topic, an offset set by hand) is read again from the start with a warning naming it, also with --from-latest; the answers come from the result store', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const N = 20;
  await produce(kafka.brokers, names.input, dataset(N, 0).messages);
  const args = cliArgs(kafka.brokers, names, ['--store', store]);
  const first = spawnEnricher(args, sandbox.env());
  runs.push(first);
  await allCommitted(names, N);
  first.child.kill('SIGTERM');
  expect((await first.exited).code).toBe(0);
  const paid = billable();

  // The group's offsets now point past what the topic holds, as after the topic was deleted and
  // created again with the same messages, or an operator's reset to an offset that does not exist.
  const committed = await committedOffsets(kafka.brokers, names.group, names.input);
  const past = new Map([...committed].filter(([, o]) => o > 0n).map(([p, o]) => [p, o + 1000n]));
  expect(past.size).toBeGreaterThan(0);
  await setGroupOffsets(names, past);

  const second = spawnEnricher([...args, '--from-latest'], sandbox.env());
  runs.push(second);
  // Every message again: --from-latest is for a group without offsets, not one whose offsets are lost.
  const outs = await readTopic(kafka.brokers, names.output, (all) => all.length >= 2 * N, 30_000);
  expect(outs.length, second.stderr().slice(-3000)).toBe(2 * N);
  for (const [partition, offset] of past) {
    expect(second.stderr()).toMatch(
      new RegExp(
        `"msg":"committed offset out of range: .*"topic":"${names.input}","partition":${partition},"committedOffset":"${offset}","earliestOffset":"0","endOffset":"${offset - 1000n}"`,
      ),
    );
  }
  expect(billable() - paid).toBe(0);
  second.child.kill('SIGTERM');
  expect(await exitWithin(second, 30_000)).toBe(0);
}, 120_000);

it('an instance that joins a running group with other settings (--dq-field, --map) is told which partitions were committed under which settings', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const N = 20;
  await produce(kafka.brokers, names.input, dataset(N, 0).messages);
  const a = spawnEnricher(cliArgs(kafka.brokers, names), sandbox.env());
  runs.push(a);
  await allCommitted(names, N);
  const other = `postalCode=/address/postalCode,street=/address/street,houseNumber=/address/houseNumber,locality=/address/locality`;
  const b = spawnEnricher(cliArgs(kafka.brokers, names, ['--dq-field', 'quality'], other), sandbox.env());
  runs.push(b);
  // B joins, the group splits the partitions between A and B, and B reads who committed its own last.
  await b.waitForLog(/"msg":"partitions last committed by a dq-kafka of this group with other settings/, 60_000);
  expect(b.stderr()).toMatch(
    new RegExp(
      `other settings: --map \\(another mapping\\), --dq-field \\\\"dq\\\\" \\(here \\\\"quality\\\\"\\); .*"group":"${names.group}","topic":"${names.input}","partitions":\\[\\d`,
    ),
  );
  expect(a.stderr()).not.toMatch(/other settings/);
  // One after the other: what this test is about is the warning, not two members leaving at once.
  a.child.kill('SIGTERM');
  expect(await exitWithin(a, 30_000), a.stderr().slice(-2000)).toBe(0);
  b.child.kill('SIGTERM');
  expect(await exitWithin(b, 30_000), b.stderr().slice(-2000)).toBe(0);
}, 120_000);

it('refuses with exit 2 a --group whose running consumers read another topic, which would leave both topics partly unread', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const theirs = uniqueTopic('theirs');
  await produce(kafka.brokers, names.input, [{ key: 'k', value: JSON.stringify({ id: 1 }) }]);
  await produce(kafka.brokers, theirs, [{ key: 'k', value: 'x' }]);
  // Another application (or a dq-kafka with another --input) already runs in the group: a kafkajs
  // consumer, whose default assignor dq-kafka shares; as the group's leader it assigns only its topic.
  const other = new Kafka({ brokers: kafka.brokers, clientId: 'other-app', logLevel: logLevel.NOTHING }).consumer({
    groupId: names.group,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
  });
  await other.connect();
  try {
    await other.subscribe({ topic: theirs, fromBeginning: true });
    await new Promise<void>((joined) => {
      other.on(other.events.GROUP_JOIN, () => joined());
      void other.run({ eachMessage: () => Promise.resolve() });
    });
    const run = spawnEnricher(cliArgs(kafka.brokers, names), sandbox.env());
    runs.push(run);
    expect(await exitWithin(run, 45_000), run.stderr().slice(-2000)).toBe(2);
    expect(errorLines(run)).toEqual([
      `dq-kafka: group-in-use: --group "${names.group}" is in use by consumers that read "${theirs}", not --input "${names.input}": the group's leader hands out the partitions of the topics it reads only, so while both run neither topic is read whole; give dq-kafka a --group of its own, then start again`,
    ]);
    expect(run.stderr()).not.toMatch(/^\s+at /m);
  } finally {
    await other.disconnect();
  }
}, 60_000);

it('names the offsets retention deleted before the group read them (the mock cluster cannot delete records)', () => {
  expect(outOfRange({ partition: 2, committed: '40', earliest: '100', end: '120' })).toBe(
    'messages from offset 40 to 99 were deleted (retention) before the group read them, and are in neither the output nor the DLQ; reading from offset 100, the earliest the topic still holds',
  );
  expect(outOfRange({ partition: 2, committed: '100', earliest: '100', end: '120' })).toBeUndefined();
  expect(outOfRange({ partition: 2, committed: '120', earliest: '100', end: '120' })).toBeUndefined();
  expect(outOfRange({ partition: 2, committed: '-1', earliest: '100', end: '120' })).toBeUndefined();
});

/** The commit metadata of an instance with `--map map` and `more` settings. */
const settings = (map: string, more: { country?: string; dqField?: string } = {}): string =>
  settingsMetadata(
    resolveEnricherOptions({
      ...{ brokers: ['b:9092'], groupId: 'g', inputTopic: 'i', outputTopic: 'o', dlqTopic: 'd', baseUrl: 'http://x', apiKey: 'k' },
      map: parseFieldMap(map, 'address'),
      ...more,
    }),
  );

it("compares the settings instances of a group share, not the order of --map entries, and ignores commits that are not dq-kafka's", () => {
  const ours = settings('street=/s,locality=/l');
  expect(settingsDiffer(ours, settings('locality=/l,street=/s'))).toEqual([]);
  expect(settingsDiffer(ours, settings('street=/s,locality=/l', { country: 'DE' }))).toEqual(['--country "DE" (here "")']);
  expect(settingsDiffer(ours, settings('street=/s'))).toEqual(['--map (another mapping)']);
  expect(settingsDiffer(ours, null)).toEqual([]);
  expect(settingsDiffer(ours, '')).toEqual([]);
  expect(settingsDiffer(ours, 'committed by another app')).toEqual([]);
  // The brokers refuse every commit whose metadata is over offset.metadata.max.bytes (4096 by default).
  expect(settings('street=/s', { dqField: 'x'.repeat(5000) }).length).toBeLessThan(1000);
});
