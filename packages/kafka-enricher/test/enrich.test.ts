import { networkInterfaces } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { cliArgs, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { committedOffsets, dataset, inputOffsets, killIfRunning, metricsPort, produce, readTopic, sourceOffsets, spawnEnricher } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => killIfRunning(run));

/** Whether this machine has the IPv6 loopback address (a container may have IPv6 off). */
const hasIpv6Loopback = (): boolean => Object.values(networkInterfaces()).some((addresses) => addresses?.some((a) => a.address === '::1'));

describe('dq-kafka enrich', () => {
  it('puts each of 10,000 input offsets in the output or the DLQ, dead-letters exactly the 5 % bad ones, keeps key order and exits 0 on SIGTERM with everything committed', async () => {
    const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
    const { messages, bad } = dataset(10_000, 20);
    await produce(kafka.brokers, input, messages);
    run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }, ['--metrics-port', '0']), sandbox.env());
    const port = await metricsPort(run);

    const [inputs, outs, dead] = await Promise.all([
      inputOffsets(kafka.brokers, input, 10_000),
      readTopic(kafka.brokers, output, (all) => all.length >= 9_500, 120_000),
      readTopic(kafka.brokers, dlq, (all) => all.length >= 500, 120_000),
    ]);
    expect(outs.length + dead.length).toBe(10_000);
    const covered = sourceOffsets(outs, dead);
    expect(inputs.filter((m) => !covered.has(`${m.partition}:${m.offset}`))).toEqual([]);

    // The DLQ holds exactly the bad messages, unchanged, with headers naming the failure and the source.
    expect(new Set(dead.map((d) => Number(d.headers['x-seq'])))).toEqual(bad);
    const codes = new Set(dead.map((d) => d.headers['dq-error-code']));
    expect(codes).toEqual(new Set(['not-json', 'not-object', 'missing-field', 'local-validation']));
    for (const d of dead) {
      expect(d.headers['dq-original-topic']).toBe(input);
      const source = inputs.find((m) => m.partition === Number(d.headers['dq-original-partition']) && m.offset === d.headers['dq-original-offset']);
      expect(source?.value).toBe(d.value);
      expect(d.headers['dq-error-message']).toMatch(/\S/);
    }

    // Outputs keep key, headers and value, add dq, and keep the order of each key.
    const lastSeqByKey = new Map<string, number>();
    for (const o of [...outs].sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)))) {
      const seq = Number(o.headers['x-seq']);
      const value = JSON.parse(o.value!) as { id: number; address: unknown; dq: { status: string; class?: string; requestId?: string } };
      expect(value.id).toBe(seq);
      expect(o.key).toBe(`k${seq % 50}`);
      expect(['accepted', 'review', 'invalid']).toContain(value.dq.status);
      expect(value.dq.class).toMatch(/^[A-F]$/);
      expect(value.dq.requestId).toBeTruthy();
      expect(seq).toBeGreaterThan(lastSeqByKey.get(o.key!) ?? -1);
      lastSeqByKey.set(o.key!, seq);
    }

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^dq_kafka_messages_consumed_total 10000$/m);
    expect(metrics).toMatch(/^dq_kafka_messages_produced_total 9500$/m);
    expect(metrics).toMatch(/^dq_kafka_dlq_messages_total\{reason="not-json"\} 125$/m);
    expect(metrics).toMatch(/^dq_kafka_result_class_total\{class="A"\} \d+$/m);
    expect(metrics).toMatch(/^dq_kafka_api_calls_total [1-9]\d*$/m);
    expect(metrics).toMatch(/^dq_kafka_consumer_lag\{topic="[^"]+",partition="\d"\} 0$/m);
    // prom-client's default process metrics ride along.
    expect(metrics).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(metrics).toMatch(/^process_resident_memory_bytes [1-9]\d*$/m);
    expect(metrics).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(metrics).toContain('# TYPE nodejs_gc_duration_seconds histogram');
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    // On IPv6 too (a scraper on an IPv6-only cluster network), where the machine has it.
    if (hasIpv6Loopback()) expect((await fetch(`http://[::1]:${port}/healthz`)).status).toBe(200);

    run.child.kill('SIGTERM');
    const exit = await run.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    const committed = await committedOffsets(kafka.brokers, group, input);
    const ends = new Map<number, bigint>();
    for (const m of inputs) ends.set(m.partition, BigInt(m.offset) + 1n > (ends.get(m.partition) ?? 0n) ? BigInt(m.offset) + 1n : ends.get(m.partition)!);
    expect(committed).toEqual(ends);
  }, 240_000);
});
