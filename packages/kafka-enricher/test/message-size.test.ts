import { afterAll, describe, expect, it } from 'vitest';
import { cliArgs, killIfRunning, produce, readTopic, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';

// A Kafka broker refuses a produce whose record batch for one partition is larger than its
// message.max.bytes (1,048,588 bytes by default), and it would refuse it again on every restart:
// dq-kafka keeps each send within --max-message-bytes (default 1,000,000) and dead-letters a single
// message that cannot fit (README "Message size"). The test broker does not enforce the limit, so
// the sizes of the produce requests dq-kafka writes are read from its debug log (kafkajs logs each
// request's size in bytes).

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => killIfRunning(run));

const address = { street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' };
/** Kafka's default message.max.bytes (the largest record batch a broker accepts). */
const BROKER_DEFAULT = 1_048_588;

/** Sizes of the produce requests in a dq-kafka debug log. */
function produceSizes(stderr: string): number[] {
  const sizes: number[] = [];
  for (const line of stderr.split('\n')) {
    if (!line.includes('"Request Produce(')) continue;
    const size = (JSON.parse(line) as { size?: number }).size;
    if (typeof size === 'number') sizes.push(size);
  }
  return sizes;
}

describe('dq-kafka and the broker message size limit', () => {
  it('by default keeps every produce request under the broker default: 500 unkeyed 2 KB messages (one fetch, one chunk) go out in order in several sends', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    const n = 500;
    const note = 'x'.repeat(1900);
    await produce(
      kafka.brokers,
      input,
      Array.from({ length: n }, (_, i) => ({
        key: null,
        value: JSON.stringify({ id: i, address: { ...address, houseNumber: String(1 + (i % 9)) }, note }),
        partition: 0,
      })),
    );
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }, ['--log-level', 'debug']), sandbox.env());
    const outs = await readTopic(kafka.brokers, output, (all) => all.length >= n, 60_000);
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });

    expect(outs.map((o) => (JSON.parse(o.value!) as { id: number }).id)).toEqual(Array.from({ length: n }, (_, i) => i));
    const sizes = produceSizes(run.stderr());
    const total = outs.reduce((sum, o) => sum + Buffer.byteLength(o.value!), 0);
    // The enriched chunk is larger than one broker batch may be, so it took more than one send.
    expect(total).toBeGreaterThan(BROKER_DEFAULT);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(BROKER_DEFAULT);
    expect(sizes.length).toBeGreaterThan(1);
  }, 120_000);

  it('dead-letters a message that alone exceeds --max-message-bytes (with its value, or without it when that is too large too) and goes on', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    const limit = 20_000;
    // A long --dq-field makes every enriched message 3,000 bytes longer than its input, while a
    // dead letter carries the input as it came (plus a few hundred bytes of dq-* headers).
    const dqField = 'd'.repeat(3000);
    const message = (id: number, noteBytes: number): string => JSON.stringify({ id, address, note: 'x'.repeat(noteBytes) });
    const fits = message(2, limit - 2500); // fits as it is, not once enriched
    const huge = message(3, limit + 5000); // too large as it is
    await produce(kafka.brokers, input, [
      { key: 'k1', value: message(1, 10), partition: 0 },
      { key: 'k2', value: fits, partition: 0, headers: { trace: 't-2' } },
      { key: 'k3', value: huge, partition: 0 },
      { key: 'k4', value: message(4, 10), partition: 0 },
    ]);
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }, ['--max-message-bytes', String(limit), '--dq-field', dqField]), sandbox.env());
    const [outs, dead] = await Promise.all([
      readTopic(kafka.brokers, output, (all) => all.length >= 2, 30_000),
      readTopic(kafka.brokers, dlq, (all) => all.length >= 2, 30_000),
    ]);
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });

    // Keyed messages are placed by key: the outputs, and the two dead letters, may sit in different partitions.
    expect(outs.map((o) => o.key).sort()).toEqual(['k1', 'k4']);
    const [k2, k3] = [...dead].sort((a, b) => a.key!.localeCompare(b.key!));
    expect([k2!.key, k3!.key]).toEqual(['k2', 'k3']);
    expect(k2!.value).toBe(fits);
    expect(k2!.headers).toMatchObject({ trace: 't-2', 'dq-error-code': 'too-large', 'dq-original-offset': '1' });
    expect(k2!.headers['dq-error-message']).toMatch(
      /^offset 1: the enriched message is \d+ bytes, more than --max-message-bytes 20000 \(raise it together with the topics' max.message.bytes, or make the message smaller\)$/,
    );
    expect(k3!.value).toBe('');
    expect(k3!.headers).toMatchObject({ 'dq-error-code': 'too-large', 'dq-original-partition': '0', 'dq-original-offset': '2' });
    expect(k3!.headers['dq-error-message']).toMatch(
      new RegExp(
        `^offset 2: the enriched message is \\d+ bytes, .*; the value \\(${Buffer.byteLength(huge)} bytes\\) is left out here: read it from ${input} partition 0 offset 2 while the topic keeps it$`,
      ),
    );
  }, 120_000);

  it('refuses a --max-message-bytes too small to hold a message, before connecting', async () => {
    const r = spawnEnricher(cliArgs(kafka.brokers, { input: 'i', output: 'o', dlq: 'd', group: 'g' }, ['--max-message-bytes', '100']), sandbox.env());
    expect(await r.exited).toEqual({ code: 2, signal: null });
    expect(r.stderr()).toContain('dq-kafka: usage: --max-message-bytes: "100" must be an integer from 4096');
  }, 30_000);
});
