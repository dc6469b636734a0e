import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { generateDirtyInputs } from '@dq/sandbox';
import { Kafka, logLevel } from 'kafkajs';
import type { IHeaders, Message } from 'kafkajs';

/** A Kafka cluster for one test file. */
export interface TestKafka {
  /** Bootstrap servers, `host:port` each. */
  brokers: string[];
  /** True when `KAFKA_BROKERS` pointed the harness at a real cluster. */
  external: boolean;
  /** Stops the mock cluster; a no-op for a real cluster. */
  stop(): Promise<void>;
}

/** Options of {@link startKafka}. */
export interface StartKafkaOptions {
  /** Environment to read `KAFKA_BROKERS` from; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** How long to wait for the mock cluster to announce its port, in ms; default 15 000. */
  startTimeoutMs?: number;
}

const READY = /replaced with ([0-9.]+:\d+)/;

/**
 * Gives a test a Kafka-protocol cluster. With `KAFKA_BROKERS=host:9092,...` set it uses that real
 * cluster and `stop()` does nothing. Otherwise it starts librdkafka's mock cluster through kcat
 * (Debian package `kcat`): one broker on a free local port, topics auto-created with 4 partitions
 * on first use. The mock cannot create topics through the admin API (it reports controller id 0
 * while numbering brokers from 1), so tests must rely on auto-creation, and consumer groups need
 * sessionTimeout ≥ 6000 ms because the mock delays a group's first join by ~3 s.
 */
export async function startKafka(options: StartKafkaOptions = {}): Promise<TestKafka> {
  const env = options.env ?? process.env;
  const configured = env['KAFKA_BROKERS']?.trim();
  if (configured) {
    const brokers = configured
      .split(',')
      .map((b) => b.trim())
      .filter(Boolean);
    return { brokers, external: true, stop: async () => undefined };
  }
  const child = spawn('kcat', ['-q', '-C', '-t', '__keepalive', '-X', 'test.mock.num.brokers=1', '-b', 'localhost:1'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const broker = await waitForBroker(child, options.startTimeoutMs ?? 15_000);
  return {
    brokers: [broker],
    external: false,
    stop: () => stopChild(child),
  };
}

function waitForBroker(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const fail = (why: string): void => {
      cleanup();
      child.kill('SIGKILL');
      reject(
        new Error(
          `the kcat mock Kafka cluster did not start: ${why}. Install kcat (apt-get install kcat) or set KAFKA_BROKERS=host:port to use a real cluster. kcat said: ${output.slice(-500)}`,
        ),
      );
    };
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = READY.exec(output);
      if (match?.[1]) {
        cleanup();
        // Keep draining stderr so kcat never blocks on a full pipe.
        child.stderr?.resume();
        resolve(match[1]);
      }
    };
    const onError = (err: Error): void => fail(err.message);
    const onExit = (code: number | null): void => fail(`kcat exited with code ${code}`);
    const timer = setTimeout(() => fail(`no broker address within ${timeoutMs} ms`), timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stderr?.off('data', onData);
      child.off('error', onError);
      child.off('exit', onExit);
    };
    child.stderr?.on('data', onData);
    child.once('error', onError);
    child.once('exit', onExit);
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
  });
}

/** A topic name no other test uses: `<prefix>-<random hex>`. */
export function uniqueTopic(prefix = 'dq-test'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** A consumer group id no other test uses. */
export function uniqueGroup(prefix = 'dq-group'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

// dq-kafka's process helpers, for its own tests and the cross-package ones that run it beside other connectors.

/** dq-kafka's built CLI (tests run against dist, like users do). */
export const CLI = fileURLToPath(new URL('../../../packages/kafka-enricher/dist/cli.js', import.meta.url));
/** A `--map` of the JSON messages {@link dataset} makes: the address fields under `/address`. */
export const MAP = 'street=/address/street,houseNumber=/address/houseNumber,postalCode=/address/postalCode,locality=/address/locality,country=/address/country';

/** One message as read back from a topic. */
export interface Read {
  partition: number;
  offset: string;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
}

function kafkaFor(brokers: string[]): Kafka {
  return new Kafka({ brokers, clientId: 'dq-test', logLevel: logLevel.NOTHING });
}

/**
 * Test input: every `badEvery`-th message is bad, cycling through not JSON, not an object, a mapped
 * field missing and an invalid country (refused as invalid input); the others are addresses the
 * sandbox knows. Keys are `k<i mod 50>`, so every key lives in one partition.
 */
export function dataset(n: number, badEvery = 20): { messages: Message[]; bad: Set<number> } {
  const pool = generateDirtyInputs(400, { seed: 7 }).filter((x) => x.input.street && x.input.houseNumber && x.input.postalCode && x.input.locality);
  const bad = new Set<number>();
  const messages = Array.from({ length: n }, (_, i): Message => {
    const key = `k${i % 50}`;
    const headers: IHeaders = { 'x-seq': String(i) };
    if (badEvery > 0 && i % badEvery === badEvery - 1) {
      bad.add(i);
      const kind = Math.floor(i / badEvery) % 4;
      const address = { ...pool[i % pool.length]!.input };
      if (kind === 0) return { key, headers, value: `{"id": ${i}, broken` };
      if (kind === 1) return { key, headers, value: JSON.stringify([i, 'not an object']) };
      if (kind === 2) return { key, headers, value: JSON.stringify({ id: i, address: { ...address, street: undefined } }) };
      return { key, headers, value: JSON.stringify({ id: i, address: { ...address, country: 'Germany' } }) };
    }
    return { key, headers, value: JSON.stringify({ id: i, address: pool[i % pool.length]!.input }) };
  });
  return { messages, bad };
}

/** Produces `messages` to `topic` (auto-created), in chunks, and waits for the acks. */
export async function produce(brokers: string[], topic: string, messages: Message[]): Promise<void> {
  const producer = kafkaFor(brokers).producer({ allowAutoTopicCreation: true });
  await producer.connect();
  try {
    for (let i = 0; i < messages.length; i += 1000) await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 1000) });
  } finally {
    await producer.disconnect();
  }
}

/** Reads `topic` from the start until `done(all)` or `timeoutMs`; returns what was read. */
export async function readTopic(brokers: string[], topic: string, done: (all: Read[]) => boolean, timeoutMs = 60_000): Promise<Read[]> {
  const consumer = kafkaFor(brokers).consumer({
    groupId: `reader-${Math.random().toString(16).slice(2)}`,
    sessionTimeout: 6000,
    heartbeatInterval: 1000,
    allowAutoTopicCreation: true,
  });
  const all: Read[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      void consumer.run({
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = String(v);
            all.push({ partition: batch.partition, offset: m.offset, key: m.key?.toString() ?? null, value: m.value?.toString() ?? null, headers });
          }
          if (done(all)) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return all;
}

/** Committed offsets of `group` on `topic`, by partition (-1: none). */
export async function committedOffsets(brokers: string[], group: string, topic: string): Promise<Map<number, bigint>> {
  const admin = kafkaFor(brokers).admin();
  await admin.connect();
  try {
    const [entry] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    return new Map((entry?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
  } finally {
    await admin.disconnect();
  }
}

/** A spawned dq-kafka process. */
export interface Running {
  child: ChildProcess;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stderr so far (JSON log lines). */
  stderr(): string;
  stdout(): string;
  /** Resolves when a stderr line matches. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

/** Spawns the built CLI with `args`; the API key goes in the environment, as the README advises. */
export function spawnEnricher(args: string[], env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [CLI, 'enrich', ...args], {
    env: { ...process.env, KAFKAJS_NO_PARTITIONER_WARNING: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let out = '';
  const waiters: Array<{ pattern: RegExp; resolve: () => void }> = [];
  child.stderr!.on('data', (c: Buffer) => {
    err += c.toString('utf8');
    for (const w of [...waiters])
      if (w.pattern.test(err)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  });
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    exited,
    stderr: () => err,
    stdout: () => out,
    waitForLog: (pattern, timeoutMs = 60_000) =>
      new Promise<void>((resolve, reject) => {
        if (pattern.test(err)) return resolve();
        const timer = setTimeout(() => reject(new Error(`no log line matching ${pattern} within ${timeoutMs} ms; stderr:\n${err.slice(-3000)}`)), timeoutMs);
        waiters.push({ pattern, resolve: () => (clearTimeout(timer), resolve()) });
      }),
  };
}

/** The offsets (as `partition:offset`) of the input messages that `reads` (output or DLQ) stand for. */
export function sourceOffsets(output: Read[], dlq: Read[]): Set<string> {
  const seen = new Set<string>();
  for (const r of output) {
    const dq = (JSON.parse(r.value!) as { dq: { source: { partition: number; offset: string } } }).dq;
    seen.add(`${dq.source.partition}:${dq.source.offset}`);
  }
  for (const r of dlq) seen.add(`${r.headers['dq-original-partition']}:${r.headers['dq-original-offset']}`);
  return seen;
}

/** Every input message as `partition:offset`, read back from the input topic. */
export async function inputOffsets(brokers: string[], topic: string, count: number): Promise<Read[]> {
  return readTopic(brokers, topic, (all) => all.length >= count);
}

/** Kills a child that is still running (test clean-up). */
export function killIfRunning(r: Running | undefined): void {
  if (r && r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
}

/** Topic and group names of one test. */
export interface Names {
  input: string;
  output: string;
  dlq: string;
  group: string;
}

/** dq-kafka's required flags only, for `names` on `brokers` (`map`: default {@link MAP}): every optional setting left at its default. */
export function requiredArgs(brokers: string[], names: Names, map = MAP): string[] {
  return ['--brokers', brokers.join(','), '--group', names.group, '--input', names.input, '--output', names.output, '--dlq', names.dlq, '--map', map];
}

/**
 * CLI arguments for `names` on `brokers` (`map`: default {@link MAP}): the default producer settings, on the mock cluster and a real one alike,
 * a session timeout of 6 s (a crashed member's partitions move sooner than with the default 30 s), and
 * --create-topics.
 */
export function cliArgs(brokers: string[], names: Names, extra: string[] = [], map = MAP): string[] {
  // The tests' output and DLQ topics are new: the brokers create them at start (--create-topics).
  return [...requiredArgs(brokers, names, map), '--session-timeout-ms', '6000', '--create-topics', ...extra];
}

/** Produces `messages` in `chunks` sends spread over about `spreadMs`, so consumers see a live stream. */
export async function produceOverTime(brokers: string[], topic: string, messages: Message[], chunks: number, spreadMs: number): Promise<void> {
  const size = Math.ceil(messages.length / chunks);
  for (let i = 0; i < messages.length; i += size) {
    await produce(brokers, topic, messages.slice(i, i + size));
    await new Promise((r) => setTimeout(r, spreadMs / chunks));
  }
}

/** Input offsets below a committed offset that are in neither the output nor the DLQ (must be none). */
export function committedButMissing(committed: Map<number, bigint>, inputs: Read[], covered: Set<string>): string[] {
  return inputs
    .filter((m) => BigInt(m.offset) < (committed.get(m.partition) ?? -1n))
    .map((m) => `${m.partition}:${m.offset}`)
    .filter((k) => !covered.has(k));
}

/** The port the enricher's metrics server reported in its log. */
export async function metricsPort(run: Running): Promise<number> {
  await run.waitForLog(/"msg":"metrics listening"/);
  return Number(/"msg":"metrics listening".*?"port":(\d+)/.exec(run.stderr())?.[1]);
}

/** One value of the enricher's /metrics (0 when the series is absent). */
export async function metricValue(port: number, series: string): Promise<number> {
  // Bounded: a request caught by the server's close as the process ends can otherwise hang.
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/**
 * Waits until the enricher's /metrics shows it up (`dq_kafka_up` 1: in its group, consuming). An
 * instance that ends first fails the wait with its exit and the end of its log, not with the
 * refused connection to its closed metrics server.
 */
export async function waitUntilUp(run: Running, port: number, timeoutMs = 120_000): Promise<void> {
  const ended = (why: string) => new Error(`dq-kafka ${why} before it was up; stderr:\n${run.stderr().slice(-3000)}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (run.child.exitCode !== null || run.child.signalCode !== null) throw ended(`ended (exit ${run.child.exitCode ?? run.child.signalCode})`);
    const up = await metricValue(port, 'dq_kafka_up').catch(async (e: unknown) => {
      // The metrics server closes as the process ends: give the exit a moment to be seen.
      const exit = await Promise.race([run.exited, new Promise<undefined>((r) => setTimeout(r, 5000, undefined))]);
      throw exit ? ended(`ended (exit ${exit.code ?? exit.signal})`) : e;
    });
    if (up === 1) return;
    if (Date.now() > deadline) throw ended(`was still starting after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Reads output and DLQ until they stand for `outCount` and `dlqCount` distinct input offsets (duplicates allowed). */
export async function readResults(
  brokers: string[],
  names: Names,
  outCount: number,
  dlqCount: number,
  timeoutMs = 120_000,
): Promise<{ outs: Read[]; dead: Read[] }> {
  const distinct = (reads: Read[], dlq: boolean): number => (dlq ? sourceOffsets([], reads) : sourceOffsets(reads, [])).size;
  const [outs, dead] = await Promise.all([
    readTopic(brokers, names.output, (all) => all.length >= outCount && distinct(all, false) >= outCount, timeoutMs),
    dlqCount === 0 ? Promise.resolve([]) : readTopic(brokers, names.dlq, (all) => all.length >= dlqCount && distinct(all, true) >= dlqCount, timeoutMs),
  ]);
  return { outs, dead };
}

/**
 * Where `names.group`'s commits stand after a run, against the `inputCount` input messages and what
 * reached the output and the DLQ (read for `readMs`, the DLQ for half of it): `missing` are committed
 * offsets in neither (must be none), `delivered` the distinct input offsets in either, `committed`
 * the messages below the committed offsets.
 */
export async function commitAudit(
  brokers: string[],
  names: Names,
  inputCount: number,
  readMs = 8_000,
): Promise<{ missing: string[]; delivered: number; committed: number }> {
  const inputs = await inputOffsets(brokers, names.input, inputCount);
  const committed = await committedOffsets(brokers, names.group, names.input);
  const [outs, dead] = await Promise.all([readTopic(brokers, names.output, () => false, readMs), readTopic(brokers, names.dlq, () => false, readMs / 2)]);
  const covered = sourceOffsets(outs, dead);
  return {
    missing: committedButMissing(committed, inputs, covered),
    delivered: covered.size,
    committed: [...committed.values()].reduce((n, o) => n + (o > 0n ? Number(o) : 0), 0),
  };
}
