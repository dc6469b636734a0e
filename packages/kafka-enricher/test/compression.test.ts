import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { cliArgs, killIfRunning, readTopic, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';

// Producers often compress (compression.type snappy, lz4 or zstd, set by the producer or the
// topic); kafkajs reads only gzip by itself. kcat (librdkafka) writes the compressed batches here.

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => killIfRunning(run));

const address = { street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' };

describe('dq-kafka reads compressed input', () => {
  it('enriches batches compressed with gzip, snappy, lz4 and zstd, every message once and unchanged', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    const codecs = ['gzip', 'snappy', 'lz4', 'zstd'];
    const perCodec = 50; // alike messages: librdkafka sends a batch uncompressed when compressing would not make it smaller
    const sent: string[] = [];
    for (const [c, codec] of codecs.entries()) {
      const lines = Array.from({ length: perCodec }, (_, i) =>
        JSON.stringify({ id: `${codec}-${i}`, address: { ...address, houseNumber: String(1 + (i % 9)) } }),
      );
      sent.push(...lines);
      execFileSync('kcat', ['-P', '-b', kafka.brokers.join(','), '-t', input, '-p', String(c), '-z', codec], { input: `${lines.join('\n')}\n` });
    }
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }), sandbox.env());
    const outs = await readTopic(kafka.brokers, output, (all) => all.length >= sent.length, 30_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${run!.stderr().slice(-1500)}`);
    });
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });

    expect(outs).toHaveLength(sent.length);
    const byId = new Map(sent.map((line) => [(JSON.parse(line) as { id: string }).id, line]));
    for (const out of outs) {
      const { dq, ...original } = JSON.parse(out.value!) as { id: string; dq: { status: string } };
      expect(JSON.stringify(original)).toBe(byId.get(original.id));
      expect(dq.status).toBe('accepted');
      byId.delete(original.id);
    }
    expect(byId.size).toBe(0);
  }, 120_000);
});
