/**
 * The three sides measured by `kafka-throughput.ts`, each reading the same input topic with its own
 * consumer group: a raw kafkajs consume → produce loop, the same loop with the platform's HTTP calls
 * in the middle (undici, same concurrency and bytes as the engine), and the dq-kafka CLI itself.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import type { EachBatchPayload, Kafka, Message } from 'kafkajs';
import { procCpuSync } from './proc-stat.js';

const CLI = fileURLToPath(new URL('../../../packages/kafka-enricher/dist/cli.js', import.meta.url));
/** HTTP calls in flight: the engine's default concurrency (dq-kafka runs with its defaults). */
export const CONCURRENCY = 32;
const PATH = '/location/v1/validate/batch/sync';
/** What the engine's transport sends with a JSON body and the API key. */
const HEADERS = { accept: 'application/json, application/problem+json', 'content-type': 'application/json', authorization: 'Bearer bench-key' };
export const MAP = 'street=/address/street,houseNumber=/address/houseNumber,postalCode=/address/postalCode,locality=/address/locality,country=/address/country';

/**
 * One measured run of one side: rate from the first message taken (or from the end of the warm-up)
 * to the last one delivered.
 */
export interface Sample {
  messagesPerSecond: number;
  /** CPU time of the consuming process (all threads) per message, in µs; null where unknown. */
  cpuMicrosPerMessage: number | null;
}

interface InputValue {
  address: { street: string; houseNumber: string; postalCode: string; locality: string; country: string };
}

/** Fills `topic` with `n` distinct addresses (64 keys, so every partition gets a share). */
export async function fill(kafka: Kafka, topic: string, n: number, run: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < n; i += 2000) {
    const messages = Array.from({ length: Math.min(2000, n - i) }, (_, j) => ({
      key: `k${(i + j) % 64}`,
      value: JSON.stringify({
        id: i + j,
        address: { street: `Street ${run}-${i + j}`, houseNumber: String(1 + ((i + j) % 200)), postalCode: '10117', locality: 'Berlin', country: 'DE' },
      }),
    }));
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

type Transform = (batch: EachBatchPayload['batch']) => Promise<Message[]>;

/**
 * eachBatch → transform → send (acks all) → commit, until `n` messages went through. The clock
 * starts once `warmup` messages went through (at the first batch when 0).
 */
async function consumeLoop(kafka: Kafka, input: string, group: string, n: number, warmup: number, transform: Transform): Promise<Sample> {
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 2000, maxWaitTimeInMs: 500 });
  const producer = kafka.producer();
  await Promise.all([consumer.connect(), producer.connect()]);
  await consumer.subscribe({ topic: input, fromBeginning: true });
  let seen = 0;
  let seenAtStart = 0;
  let t0 = 0;
  let cpu0 = process.cpuUsage();
  const measured = await new Promise<Sample>((resolve, reject) => {
    void consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        if (t0 === 0 && warmup === 0) [t0, cpu0] = [performance.now(), process.cpuUsage()];
        const last = batch.messages[batch.messages.length - 1];
        if (!last) return;
        try {
          await producer.send({ topic: `${group}-out`, acks: -1, messages: await transform(batch) });
        } catch (err) {
          return reject(err as Error);
        }
        resolveOffset(last.offset);
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() }]);
        seen += batch.messages.length;
        if (t0 === 0 && seen >= warmup) [t0, cpu0, seenAtStart] = [performance.now(), process.cpuUsage(), seen];
        if (seen < n) return;
        const cpu = process.cpuUsage(cpu0);
        const counted = seen - seenAtStart;
        resolve({ messagesPerSecond: counted / ((performance.now() - t0) / 1000), cpuMicrosPerMessage: (cpu.user + cpu.system) / counted });
      },
    });
  });
  await Promise.all([consumer.disconnect(), producer.disconnect()]);
  return measured;
}

/** The reference: the messages are sent on as they are, no HTTP. */
export function rawRun(kafka: Kafka, input: string, n: number, warmup = 0): Promise<Sample> {
  return consumeLoop(kafka, input, `raw-${input}`, n, warmup, async (batch) => batch.messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })));
}

/**
 * The reference with the platform calls: each value parsed, its address sent to batch/sync with
 * undici ({@link CONCURRENCY} lanes on one keep-alive pool, the engine's headers and body fields),
 * the answer parsed and checked, and a `dq` member added to the value sent on.
 */
export async function rawHttpRun(kafka: Kafka, input: string, n: number, endpoint: string, warmup = 0): Promise<Sample> {
  const pool = new Pool(endpoint, { connections: CONCURRENCY, pipelining: 1 });
  try {
    return await consumeLoop(kafka, input, `http-${input}`, n, warmup, async (batch) => {
      const messages = batch.messages;
      const out = new Array<Message>(messages.length);
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < messages.length) {
          const i = next++;
          const m = messages[i]!;
          const value = JSON.parse(m.value!.toString('utf8')) as InputValue & Record<string, unknown>;
          const { street, houseNumber, postalCode, locality, country } = value.address;
          const res = await pool.request({
            path: PATH,
            method: 'POST',
            headers: HEADERS,
            body: JSON.stringify({ street, houseNumber, postalCode, locality, country, customerAddressId: String(i % 64) }),
          });
          const body = (await res.body.json()) as { resultClass?: string; results?: unknown[] };
          if (res.statusCode !== 200 || body.resultClass !== 'A') throw new Error(`raw HTTP loop: unexpected answer ${res.statusCode}`);
          const dq = {
            status: 'accepted',
            class: body.resultClass,
            address: body.results?.[0],
            requestId: res.headers['x-service-request-id'],
            source: { topic: batch.topic, partition: batch.partition, offset: m.offset },
          };
          out[i] = { key: m.key, value: JSON.stringify({ ...value, dq }), headers: m.headers };
        }
      };
      await Promise.all(Array.from({ length: Math.min(CONCURRENCY, messages.length) }, lane));
      return out;
    });
  } finally {
    await pool.close();
  }
}

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

/** utime + stime of a Linux process in µs (`/proc/<pid>/stat`); null elsewhere. */
function processCpuMicros(pid: number | undefined): number | null {
  const cpu = procCpuSync(pid);
  return cpu === undefined ? null : cpu.ownMs * 1000;
}

/**
 * dq-kafka as users run it, with its defaults but two: `--rate-limit 0` (the endpoint is local) and
 * `--store off` (the raw loops keep no answers either; the store's own cost is the store-overhead
 * benchmark's); `--create-topics` for its new output and DLQ topics. The clock
 * starts when /metrics first shows a consumed message (polled every 20 ms) and stops when it shows
 * `n` produced. Each scrape costs the measured process CPU the raw sides (timed in-process) do not
 * pay, so the end is polled adaptively: the next scrape waits about half the time the current rate
 * needs for the rest, between 20 and 500 ms — a handful of scrapes per run, and the last one at
 * most ~20 ms late. With `profileDir` the process writes a V8 CPU profile there.
 */
export async function dqRun(
  brokers: string[],
  endpoint: string,
  input: string,
  n: number,
  extraArgs: string[],
  profileDir?: string,
  cli = CLI,
  warmup = 0,
): Promise<Sample> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      cli,
      'enrich',
      '--brokers',
      brokers.join(','),
      '--group',
      `dq-${input}`,
      '--input',
      input,
      '--output',
      `dq-${input}-out`,
      '--dlq',
      `dq-${input}-dlq`,
      '--map',
      MAP,
      '--session-timeout-ms',
      '6000',
      '--create-topics', // new output and DLQ topics each run
      '--rate-limit',
      '0',
      '--metrics-port',
      '0',
      '--base-url',
      endpoint,
      '--store',
      'off',
      ...extraArgs,
    ],
    { env: { ...process.env, DQ_API_KEY: 'bench-key', DQ_KAFKA_LOG_LEVEL: 'info', KAFKAJS_NO_PARTITIONER_WARNING: '1' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  try {
    for (let i = 0; i < 200 && !/"port":\d+/.test(log); i++) await new Promise((r) => setTimeout(r, 50));
    const port = Number(/"msg":"metrics listening".*?"port":(\d+)/.exec(log)?.[1] ?? NaN);
    if (!Number.isFinite(port)) throw new Error(`dq-kafka did not start: ${log.slice(-1000)}`);
    const deadline = Date.now() + 300_000;
    // The clock starts at the first message taken, or once `warmup` messages were delivered.
    const started = warmup === 0 ? 'dq_kafka_messages_consumed_total' : 'dq_kafka_messages_produced_total';
    let producedAtStart = 0;
    for (let count = await metric(port, started); count < Math.max(1, warmup); count = await metric(port, started)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`dq-kafka did not get going: ${log.slice(-1000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const t0 = performance.now();
    const cpu0 = processCpuMicros(child.pid);
    if (warmup > 0) producedAtStart = await metric(port, 'dq_kafka_messages_produced_total');
    for (
      let produced = await metric(port, 'dq_kafka_messages_produced_total');
      produced < n;
      produced = await metric(port, 'dq_kafka_messages_produced_total')
    ) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`dq-kafka did not finish: ${log.slice(-1000)}`);
      const done = produced - producedAtStart;
      const perMessageMs = done > 0 ? (performance.now() - t0) / done : 1;
      await new Promise((r) => setTimeout(r, Math.min(500, Math.max(20, ((n - produced) * perMessageMs) / 2))));
    }
    const elapsed = performance.now() - t0;
    const cpu1 = processCpuMicros(child.pid);
    const counted = n - producedAtStart;
    return { messagesPerSecond: counted / (elapsed / 1000), cpuMicrosPerMessage: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / counted };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }
}
