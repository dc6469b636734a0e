/**
 * Kafka throughput: messages/s of the dq-kafka CLI (a separate process: JSON decode, mapping, the
 * engine's HTTP calls, enriched sends, commits after delivery) against an instant local endpoint,
 * beside two references measured in the same run on the same broker and topic:
 *
 * - raw + HTTP: a kafkajs consume → produce loop (eachBatch → send → commit) making the same
 *   batch/sync calls with undici at the engine's concurrency before sending — the fair reference,
 *   since dq-kafka must make one call per distinct message, and the headline ratio (target ≥ 0.8);
 * - raw: the same loop with no HTTP at all — shown for scale (what Kafka alone costs here).
 *
 * Fairness: the endpoint runs in a child process (this file with `--serve`), so it shares an event
 * loop with no side; each side reads the same fresh topic of distinct addresses (dedup and the cache
 * cannot flatter dq-kafka) with its own consumer group; the order of the sides rotates run by run;
 * rates run from the end of a warm-up (the first `warmup` messages delivered, group join and
 * start-up excluded) to the last message delivered, on every side alike: dq-kafka starts as a
 * fresh process each run while the raw loops run in this process, which grows warmer run by run (its
 * JIT has compiled kafkajs and undici), so a clock started at the first message compared a cold
 * dq-kafka with an ever warmer reference (a dq-kafka consumer runs for hours, warm). `warmup=0`
 * starts the clocks at the first message instead. Figures are medians. CPU per message (the
 * consuming process, all threads) is steadier than wall time on a shared machine and is reported
 * beside it.
 *
 * Broker: librdkafka's mock cluster via kcat (`apt-get install kcat`), or KAFKA_BROKERS.
 * Run: `node tools/bench/dist/kafka-throughput.js [messages=30000] [runs=3] [warmup=5000] [-- extra dq-kafka flags]`.
 * KAFKA_BENCH_CPU_PROF_DIR=<dir> writes a CPU profile of each dq-kafka process there;
 * KAFKA_BENCH_CLI=<path> measures another build of the CLI; KAFKA_BENCH_OUT=<file> writes the JSON
 * there instead of tools/bench/results/kafka-throughput.json.
 */
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { CONCURRENCY, dqRun, fill, rawHttpRun, rawRun } from './kafka-bench-sides.js';
import type { Sample } from './kafka-bench-sides.js';
import { fixedClassA, serveInstant, startInstantServer } from './instant-server.js';
import { median } from './stats.js';

const RESULT = fileURLToPath(new URL('../results/kafka-throughput.json', import.meta.url));
const TARGET = 0.8;

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

const rate = (xs: Sample[]): number => median(xs.map((s) => s.messagesPerSecond));
const cpu = (xs: Sample[]): number | null =>
  xs.every((s) => s.cpuMicrosPerMessage !== null) ? Math.round(median(xs.map((s) => s.cpuMicrosPerMessage ?? 0))) : null;

type Side = 'dq' | 'raw' | 'rawHttp';
const SIDES: Side[] = ['raw', 'rawHttp', 'dq'];

async function main(): Promise<void> {
  const dashes = process.argv.indexOf('--');
  const positional = dashes === -1 ? process.argv.slice(2) : process.argv.slice(2, dashes);
  const dqArgs = dashes === -1 ? [] : process.argv.slice(dashes + 1);
  const n = Number(positional[0] ?? 30_000);
  const runs = Math.max(3, Number(positional[1] ?? 3));
  const warmup = Math.min(Math.floor(n / 2), Number(positional[2] ?? 5_000));
  const profileDir = process.env['KAFKA_BENCH_CPU_PROF_DIR'];
  const cli = process.env['KAFKA_BENCH_CLI'];
  const loadBefore = loadavg().map((l) => Number(l.toFixed(2)));
  const broker = await startBroker();
  const endpoint = await startInstantServer(fileURLToPath(import.meta.url));
  const kafka = new Kafka({ brokers: broker.brokers, clientId: 'bench', logLevel: logLevel.NOTHING });
  const samples: Record<Side, Sample[]> = { dq: [], raw: [], rawHttp: [] };
  try {
    for (let r = 0; r < runs; r++) {
      const input = `bench-${Date.now()}-${r}`;
      await fill(kafka, input, n, r);
      // Rotate the order so drift (load from other processes, broker state) favours no side.
      for (const side of [...SIDES.slice(r % 3), ...SIDES.slice(0, r % 3)]) {
        if (side === 'raw') samples.raw.push(await rawRun(kafka, input, n, warmup));
        else if (side === 'rawHttp') samples.rawHttp.push(await rawHttpRun(kafka, input, n, endpoint.url, warmup));
        else samples.dq.push(await dqRun(broker.brokers, endpoint.url, input, n, dqArgs, profileDir, cli, warmup));
      }
      const [d, h, w] = [samples.dq.at(-1)!, samples.rawHttp.at(-1)!, samples.raw.at(-1)!];
      process.stderr.write(
        `run ${r + 1}/${runs}: dq-kafka ${Math.round(d.messagesPerSecond)} msg/s (${Math.round(d.cpuMicrosPerMessage ?? NaN)} µs CPU/msg), ` +
          `raw + HTTP ${Math.round(h.messagesPerSecond)} msg/s (${Math.round(h.cpuMicrosPerMessage ?? NaN)} µs), raw ${Math.round(w.messagesPerSecond)} msg/s (${Math.round(w.cpuMicrosPerMessage ?? NaN)} µs)\n`,
      );
    }
  } finally {
    endpoint.child.kill();
    broker.stop();
  }
  const [dq, raw, rawHttp] = [rate(samples.dq), rate(samples.raw), rate(samples.rawHttp)];
  const result = {
    benchmark: 'kafka-throughput',
    ...(cli ? { cli } : {}),
    messages: n,
    warmupMessages: warmup,
    runs,
    concurrency: CONCURRENCY,
    dqArgs,
    cpus: availableParallelism(),
    node: process.version,
    broker: process.env['KAFKA_BROKERS'] ? 'KAFKA_BROKERS' : 'librdkafka mock cluster (kcat)',
    dqMessagesPerSecond: Math.round(dq),
    rawHttpMessagesPerSecond: Math.round(rawHttp),
    ratio: Number((dq / rawHttp).toFixed(3)),
    target: TARGET,
    // Each run's own ratio (same topic, back to back): the spread of the headline figure.
    runRatios: samples.dq.map((d, i) => Number((d.messagesPerSecond / samples.rawHttp[i]!.messagesPerSecond).toFixed(3))),
    rawMessagesPerSecond: Math.round(raw),
    ratioToRawNoHttp: Number((dq / raw).toFixed(3)),
    cpuMicrosPerMessage: { dq: cpu(samples.dq), raw: cpu(samples.raw), rawHttp: cpu(samples.rawHttp) },
    loadAverage: { before: loadBefore, after: loadavg().map((l) => Number(l.toFixed(2))) },
    samples: Object.fromEntries(
      SIDES.map((s) => [
        s,
        samples[s].map((x) => ({
          messagesPerSecond: Math.round(x.messagesPerSecond),
          cpuMicrosPerMessage: x.cpuMicrosPerMessage === null ? null : Math.round(x.cpuMicrosPerMessage),
        })),
      ]),
    ),
    measuredAt: new Date().toISOString(),
  };
  const out = process.env['KAFKA_BENCH_OUT'] ?? RESULT;
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    `dq-kafka ${result.dqMessagesPerSecond} msg/s vs raw kafkajs + the same HTTP calls ${result.rawHttpMessagesPerSecond} msg/s: ratio ${result.ratio} ` +
      `(target ≥ ${TARGET}; per run ${result.runRatios.join(', ')}); vs raw kafkajs without HTTP ${result.rawMessagesPerSecond} msg/s: ${result.ratioToRawNoHttp}\n`,
  );
}

if (process.argv[2] === '--serve') serveInstant(fixedClassA);
else await main();
