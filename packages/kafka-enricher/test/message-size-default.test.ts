import { afterAll, describe, expect, it } from 'vitest';
import { cliArgs, killIfRunning, produce, readTopic, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';

// --max-message-bytes left out: the largest send is 1,000,000 bytes (README "Message size"), so a
// message whose enriched form is larger goes to the DLQ as too-large, and one a little smaller is
// enriched. (message-size.test.ts passes the flag for the dead letters; the test broker enforces no
// limit of its own, so the refusals here are dq-kafka's.)
const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => killIfRunning(run));

const address = { street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' };
/** A message value of exactly `bytes` bytes (its note pads it). */
function valueOf(id: number, bytes: number): string {
  const bare = JSON.stringify({ id, address, note: '' });
  return JSON.stringify({ id, address, note: 'x'.repeat(bytes - Buffer.byteLength(bare)) });
}

describe('dq-kafka enrich without --max-message-bytes', () => {
  it('enriches a 990,000-byte message and dead-letters as too-large a 998,700-byte one, whose enriched form (about 400 bytes more) passes 1,000,000 bytes', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    await produce(kafka.brokers, input, [
      { key: 'k1', value: valueOf(1, 200), partition: 0 },
      { key: 'k2', value: valueOf(2, 990_000), partition: 0 },
      { key: 'k3', value: valueOf(3, 998_700), partition: 0 },
      { key: 'k4', value: valueOf(4, 200), partition: 0 },
    ]);
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }), sandbox.env());
    const [outs, dead] = await Promise.all([
      readTopic(kafka.brokers, output, (all) => all.length >= 3, 30_000),
      readTopic(kafka.brokers, dlq, (all) => all.length >= 1, 30_000),
    ]);
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });

    // Keyed messages are placed by key: the outputs may sit in different partitions.
    expect(outs.map((o) => o.key).sort()).toEqual(['k1', 'k2', 'k4']);
    const big = outs.find((o) => o.key === 'k2')!;
    expect(JSON.parse(big.value!)).toMatchObject({ id: 2, note: expect.stringMatching(/^x+$/), dq: { status: 'accepted' } });
    expect(Buffer.byteLength(big.value!)).toBeGreaterThan(990_000);

    expect(dead.map((d) => d.key)).toEqual(['k3']);
    expect(dead[0]!.headers).toMatchObject({ 'dq-error-code': 'too-large', 'dq-original-partition': '0', 'dq-original-offset': '2' });
    expect(dead[0]!.headers['dq-error-message']).toMatch(/^offset 2: the enriched message is \d+ bytes, more than --max-message-bytes 1000000 /);
  }, 60_000);
});
