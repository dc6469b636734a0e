import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { cliArgs, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { killIfRunning, produce, readTopic, spawnEnricher } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

// A value is passed on as the bytes it came with: what is not UTF-8 is not JSON (RFC 8259 8.1) and
// is dead-lettered byte for byte, never "repaired" with U+FFFD into the output and sent to the platform.

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => killIfRunning(run));

const address = { street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' };

/** The raw value bytes of every message of `topic`, by key, once `count` were read. */
async function rawValues(topic: string, count: number): Promise<Map<string, Buffer | null>> {
  const consumer = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING }).consumer({ groupId: uniqueGroup('raw'), sessionTimeout: 6000 });
  const seen = new Map<string, Buffer | null>();
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${seen.size} of ${count} messages of ${topic}`)), 60_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.set(message.key?.toString() ?? '', message.value);
          if (seen.size < count) return;
          clearTimeout(timer);
          resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

describe('dq-kafka and the bytes of a value', () => {
  it('dead-letters a value that is not valid UTF-8 unchanged, naming the byte, instead of enriching a U+FFFD copy', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    const good = JSON.stringify({ id: 1, address });
    const text = JSON.stringify({ id: 2, address: { ...address, street: 'Haupt#str' } });
    const bad = Buffer.from(text.replace('#', '\u0000'), 'utf8');
    const at = bad.indexOf(0);
    bad[at] = 0xff; // a byte that never occurs in UTF-8, inside the mapped street
    await produce(kafka.brokers, input, [
      { key: 'good', value: good, partition: 0 },
      { key: 'bad', value: bad, headers: { trace: 't-2' }, partition: 0 },
    ]);
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }), sandbox.env());
    const [outs, dead] = await Promise.all([
      readTopic(kafka.brokers, output, (all) => all.some((o) => o.key === 'good'), 30_000),
      readTopic(kafka.brokers, dlq, (all) => all.length >= 1, 30_000),
    ]);
    expect(outs.map((o) => o.key)).toEqual(['good']);
    expect(dead.map((d) => d.key)).toEqual(['bad']);
    expect((await rawValues(dlq, 1)).get('bad')).toEqual(bad);
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr()).toEqual({ code: 0, signal: null });

    expect(dead[0]!.headers).toMatchObject({ trace: 't-2', 'dq-error-code': 'not-json', 'dq-original-partition': '0', 'dq-original-offset': '1' });
    expect(dead[0]!.headers['dq-error-message']).toBe(
      `offset 1: the value is not valid UTF-8 (a malformed sequence starts at byte ${at}, 0xff), so it is not JSON text; the producer must write UTF-8`,
    );
  }, 120_000);

  it('passes on a message with a header whose value is null (written empty: kafkajs cannot write null) instead of stopping at it on every start', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    // kafkajs cannot produce a null header value either; kcat (a librdkafka client) can: -H name without "=".
    execFileSync('kcat', ['-P', '-b', kafka.brokers.join(','), '-t', input, '-p', '0', '-k', 'k1', '-H', 'nullh', '-H', 'empty=', '-H', 'x=1'], {
      input: `${JSON.stringify({ id: 1, address })}\n`,
    });
    await produce(kafka.brokers, input, [{ key: 'k2', value: JSON.stringify({ id: 2, address }), partition: 0 }]);
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }), sandbox.env());
    const outs = await readTopic(kafka.brokers, output, (all) => all.length >= 2, 30_000);
    expect(run.stdout(), run.stderr().slice(-2000)).toBe(''); // still running: no summary line yet
    expect(outs.map((o) => o.key)).toEqual(['k1', 'k2']);
    expect(outs[0]!.headers).toEqual({ nullh: '', empty: '', x: '1' });
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr()).toEqual({ code: 0, signal: null });
  }, 120_000);

  it('passes on headers named like members of Object.prototype (constructor, __proto__, toString) instead of stopping at them on every start', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    // kafkajs reads a header named "constructor" as [Object, value]: sent as it was read, the send threw.
    const headers = ['constructor=c', '__proto__=p', 'toString=1', 'toString=2'];
    execFileSync('kcat', ['-P', '-b', kafka.brokers.join(','), '-t', input, '-p', '0', '-k', 'k1', ...headers.flatMap((h) => ['-H', h])], {
      input: `${JSON.stringify({ id: 1, address })}\n`,
    });
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }), sandbox.env());
    const outs = await readTopic(kafka.brokers, output, (all) => all.length >= 1, 30_000);
    expect(
      outs.map((o) => o.key),
      run.stderr().slice(-2000),
    ).toEqual(['k1']);
    // Read with kcat: kafkajs's own reader would take these names apart again.
    const read = execFileSync('kcat', ['-C', '-b', kafka.brokers.join(','), '-t', output, '-o', 'beginning', '-c', '1', '-e', '-f', '%h'], {
      encoding: 'utf8',
    });
    expect(read).toBe(headers.join(','));
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr()).toEqual({ code: 0, signal: null });
  }, 120_000);
});
