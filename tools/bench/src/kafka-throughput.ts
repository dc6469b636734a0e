/**
 * Kafka throughput: messages/s of the dq-kafka CLI (a separate process: JSON decode, mapping, the
 * engine's worker pool and HTTP calls, enriched sends, commits after delivery) against an instant
 * local endpoint, beside a raw kafkajs consume → produce loop (eachBatch → send → commit) on the
 * same broker in the same run. Target ratio ≥ 0.6.
 *
 * Broker: librdkafka's mock cluster via kcat (`apt-get install kcat`), or KAFKA_BROKERS. Each run
 * uses fresh topics with distinct addresses, so dedup and the cache cannot flatter dq-kafka. Both
 * rates are measured from the first message taken to the last one delivered (group join excluded).
 *
 * Run: `node tools/bench/dist/kafka-throughput.js [messages=20000] [runs=3]`
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';

const CLI = fileURLToPath(new URL('../../../packages/kafka-enricher/dist/cli.js', import.meta.url));
const RESULT = fileURLToPath(new URL('../results/kafka-throughput.json', import.meta.url));

async function startBroker(): Promise<{ brokers: string[]; stop: () => void }> {
  if (process.env['KAFKA_BROKERS']) return { brokers: process.env['KAFKA_BROKERS'].split(','), stop: () => undefined };
  const child = spawn('kcat', ['-q', '-C', '-t', '__keepalive', '-X', 'test.mock.num.brokers=1', '-b', 'localhost:1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const broker = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.once('error', reject);
    child.stderr.on('data', (c: Buffer) => {
      text += c.toString();
      const m = /replaced with ([0-9.]+:\d+)/.exec(text);
      if (m?.[1]) resolve(m[1]);
    });
  });
  return { brokers: [broker], stop: () => void child.kill('SIGKILL') };
}

/** Answers every batch/sync at once with a class-A body echoing customerAddressId. */
async function startEndpoint(): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { customerAddressId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { customerAddressId?: string };
      res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': 'bench' });
      res.end(JSON.stringify({
        customerAddressId,
        resultClass: 'A',
        results: [{ addressType: 'delivery', country: 'DE', postalCode: '10117', locality: 'Berlin', street: 'Unter den Linden', houseNumber: '1' }],
      }));
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => void server.close() };
}

async function fill(kafka: Kafka, topic: string, n: number, run: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < n; i += 2000) {
    const messages = Array.from({ length: Math.min(2000, n - i) }, (_, j) => ({
      key: `k${(i + j) % 64}`,
      value: JSON.stringify({ id: i + j, address: { street: `Street ${run}-${i + j}`, houseNumber: String(1 + ((i + j) % 200)), postalCode: '10117', locality: 'Berlin', country: 'DE' } }),
    }));
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

/** The reference loop: eachBatch → send the same messages → commit. */
async function rawRun(kafka: Kafka, input: string, n: number): Promise<number> {
  const consumer = kafka.consumer({ groupId: `raw-${input}`, sessionTimeout: 6000, heartbeatInterval: 2000, maxWaitTimeInMs: 500 });
  const producer = kafka.producer();
  await Promise.all([consumer.connect(), producer.connect()]);
  await consumer.subscribe({ topic: input, fromBeginning: true });
  let seen = 0;
  let t0 = 0;
  const elapsed = await new Promise<number>((resolve) => {
    void consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        if (t0 === 0) t0 = performance.now();
        await producer.send({ topic: `${input}-raw-out`, acks: -1, messages: batch.messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })) });
        const last = batch.messages[batch.messages.length - 1];
        if (last) {
          resolveOffset(last.offset);
          await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() }]);
        }
        seen += batch.messages.length;
        if (seen >= n) resolve(performance.now() - t0);
      },
    });
  });
  await Promise.all([consumer.disconnect(), producer.disconnect()]);
  return n / (elapsed / 1000);
}

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

/** dq-kafka as users run it; rate from the first message consumed to the last one produced (metrics polled every 10 ms). */
async function dqRun(brokers: string[], endpoint: string, input: string, n: number): Promise<number> {
  const child: ChildProcess = spawn(process.execPath, [CLI, 'enrich', '--brokers', brokers.join(','), '--group', `dq-${input}`, '--input', input,
    '--output', `${input}-dq-out`, '--dlq', `${input}-dq-dlq`, '--map', 'street=/address/street,houseNumber=/address/houseNumber,postalCode=/address/postalCode,locality=/address/locality,country=/address/country',
    '--session-timeout-ms', '6000', '--no-idempotent', '--rate-limit', '0', '--metrics-port', '0', '--base-url', endpoint],
  { env: { ...process.env, DQ_API_KEY: 'bench-key', DQ_KAFKA_LOG_LEVEL: 'info', KAFKAJS_NO_PARTITIONER_WARNING: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  for (let i = 0; i < 200 && !/"port":\d+/.test(log); i++) await new Promise((r) => setTimeout(r, 50));
  const port = Number(/"msg":"metrics listening".*?"port":(\d+)/.exec(log)?.[1] ?? NaN);
  if (!Number.isFinite(port)) throw new Error(`dq-kafka did not start: ${log.slice(-1000)}`);
  let t0 = 0;
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error('dq-kafka run timed out');
    if (t0 === 0 && (await metric(port, 'dq_kafka_messages_consumed_total')) > 0) t0 = performance.now();
    if (t0 !== 0 && (await metric(port, 'dq_kafka_messages_produced_total')) >= n) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const elapsed = performance.now() - t0;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return n / (elapsed / 1000);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 20_000);
  const runs = Math.max(1, Number(process.argv[3] ?? 3));
  const broker = await startBroker();
  const endpoint = await startEndpoint();
  const kafka = new Kafka({ brokers: broker.brokers, clientId: 'bench', logLevel: logLevel.NOTHING });
  const dq: number[] = [];
  const raw: number[] = [];
  try {
    for (let r = 0; r < runs; r++) {
      const input = `bench-${Date.now()}-${r}`;
      await fill(kafka, input, n, r);
      raw.push(await rawRun(kafka, input, n));
      dq.push(await dqRun(broker.brokers, endpoint.url, input, n));
      process.stderr.write(`run ${r + 1}/${runs}: dq-kafka ${Math.round(dq[r]!)} msg/s, raw kafkajs ${Math.round(raw[r]!)} msg/s\n`);
    }
  } finally {
    endpoint.close();
    broker.stop();
  }
  const result = {
    benchmark: 'kafka-throughput', messages: n, runs, cpus: availableParallelism(), node: process.version,
    broker: process.env['KAFKA_BROKERS'] ? 'KAFKA_BROKERS' : 'librdkafka mock cluster (kcat)',
    dqMessagesPerSecond: Math.round(median(dq)), rawMessagesPerSecond: Math.round(median(raw)),
    ratio: Number((median(dq) / median(raw)).toFixed(3)), target: 0.6,
    samples: { dq: dq.map(Math.round), raw: raw.map(Math.round) }, measuredAt: new Date().toISOString(),
  };
  await mkdir(fileURLToPath(new URL('../results/', import.meta.url)), { recursive: true });
  await writeFile(RESULT, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`dq-kafka ${result.dqMessagesPerSecond} msg/s vs raw kafkajs ${result.rawMessagesPerSecond} msg/s: ratio ${result.ratio} (target ≥ ${result.target})\n`);
}

await main();
