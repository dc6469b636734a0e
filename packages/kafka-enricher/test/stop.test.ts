import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { cliArgs, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import {
  commitAudit,
  committedButMissing,
  committedOffsets,
  dataset,
  inputOffsets,
  killIfRunning,
  metricsPort,
  metricValue,
  produce,
  produceOverTime,
  readResults,
  readTopic,
  sourceOffsets,
  spawnEnricher,
  waitUntilUp,
} from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { exitWithin } from './exit.js';
import { refusedByGroup } from '../src/enricher.js';

const QUOTA_KEY = 'dq-small-quota-key';
let kafka: TestKafka;
let sandbox: Sandbox;
const runs: Running[] = [];

beforeAll(async () => {
  [kafka, sandbox] = await Promise.all([
    startKafka(),
    startSandbox({
      config: {
        accounts: [
          { id: 'sandbox', apiKeys: [DEFAULT_API_KEY], plan: { quota: 1_000_000_000, validUntil: null } },
          { id: 'small', apiKeys: [QUOTA_KEY], plan: { quota: 40, validUntil: null } },
        ],
      },
    }),
  ]);
});
afterAll(async () => {
  runs.forEach(killIfRunning);
  await Promise.all([kafka?.stop(), sandbox?.close()]);
});

it('drains on SIGTERM mid-stream: exits 0 within the drain bound, commits only delivered offsets, and a restart finishes the rest', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(6_000, 20);
  const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
  const args = cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--drain-timeout-ms', '5000', '--batch-size', '100']);
  await produce(kafka.brokers, names.input, messages.slice(0, 500));
  const first = spawnEnricher(args, env);
  runs.push(first);
  const port = await metricsPort(first);
  const producing = produceOverTime(kafka.brokers, names.input, messages.slice(500), 10, 5_000);
  for (let i = 0; i < 300 && (await metricValue(port, 'dq_kafka_messages_produced_total')) === 0; i++) await new Promise((r) => setTimeout(r, 100));
  const signalled = Date.now();
  first.child.kill('SIGTERM');
  expect(await first.exited).toEqual({ code: 0, signal: null });
  expect(Date.now() - signalled).toBeLessThan(5_000 + 15_000);
  expect(first.stderr()).toMatch(/"msg":"draining/);
  await producing;

  const inputs = await inputOffsets(kafka.brokers, names.input, 6_000);
  const committed = await committedOffsets(kafka.brokers, names.group, names.input);
  expect([...committed.values()].some((o) => o > 0n)).toBe(true);
  // Everything delivered so far: read both topics to their current end.
  const [partialOuts, partialDlq] = await Promise.all([
    readTopic(kafka.brokers, names.output, () => false, 10_000),
    readTopic(kafka.brokers, names.dlq, () => false, 10_000),
  ]);
  expect(committedButMissing(committed, inputs, sourceOffsets(partialOuts, partialDlq))).toEqual([]);

  const second = spawnEnricher(args, env);
  runs.push(second);
  const { outs, dead } = await readResults(kafka.brokers, names, 5_700, 300);
  const covered = sourceOffsets(outs, dead);
  expect(inputs.filter((m) => !covered.has(`${m.partition}:${m.offset}`))).toEqual([]);
  second.child.kill('SIGTERM');
  expect((await second.exited).code).toBe(0);
}, 240_000);

it('SIGTERM during a backlog at the rate limit: finishes only the calls under way, exits 0 at once with committed = delivered, and a restart delivers the rest, each message once, no answer bought twice', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const N = 600;
  // Addresses of their own: every message is a call, paced at the contract's 100 per second.
  const messages = dataset(N, 0).messages.map((m, i) => {
    const value = JSON.parse(String(m.value)) as { address: Record<string, unknown> };
    value.address['houseNumber'] = String(5000 + i);
    return { ...m, value: JSON.stringify(value) };
  });
  await produce(kafka.brokers, names.input, messages);
  const store = await mkdtemp(join(tmpdir(), 'dq-kafka-stop-'));
  const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);
  const paidBefore = billable();
  // The whole backlog is taken from Kafka (--max-in-flight 5000); at 100 calls per second it would
  // take 6 s, twice the drain timeout. The engine is given 64 records at a time (8 connections).
  const args = cliArgs(kafka.brokers, names, [
    '--metrics-port',
    '0',
    '--drain-timeout-ms',
    '3000',
    '--rate-limit',
    '100',
    '--concurrency',
    '8',
    '--store',
    store,
  ]);
  const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
  try {
    const first = spawnEnricher(args, env);
    runs.push(first);
    const port = await metricsPort(first);
    for (let i = 0; i < 600 && (await metricValue(port, 'dq_kafka_messages_consumed_total')) < N; i++) await new Promise((r) => setTimeout(r, 50));
    // Every message is taken; about 150 are answered when the stop comes.
    await new Promise((r) => setTimeout(r, 1_500));
    first.child.kill('SIGTERM');
    expect(await first.exited, first.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
    const summary = JSON.parse(first.stdout().trim().split('\n').pop()!) as { exitCode: number; reason: string; records: number };
    expect(summary).toMatchObject({ exitCode: 0, reason: 'stop' });
    expect(summary.records).toBeGreaterThan(0);
    expect(summary.records).toBeLessThan(N);
    // Committed: exactly what was delivered (the outputs read below show which, once each).
    const committed = await committedOffsets(kafka.brokers, names.group, names.input);
    expect([...committed.values()].reduce((n, o) => n + (o > 0n ? Number(o) : 0), 0)).toBe(summary.records);

    const second = spawnEnricher(args, env);
    runs.push(second);
    const { outs } = await readResults(kafka.brokers, names, N, 0, 60_000);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    const sources = outs.map((o) => {
      const { partition, offset } = (JSON.parse(o.value!) as { dq: { source: { partition: number; offset: string } } }).dq.source;
      return `${partition}:${offset}`;
    });
    // Each message once: what the first run delivered was committed (else it came twice), and what
    // it committed was delivered (else the restart skipped it and it is missing).
    expect(sources.length).toBe(N);
    expect(new Set(sources).size).toBe(N);
    // The calls finished during the drain but not delivered were answered from the store.
    expect(billable() - paidBefore).toBe(N);
  } finally {
    await rm(store, { recursive: true, force: true });
  }
}, 120_000);

it('exits 75 when SIGTERM finds the platform slower than --drain-timeout-ms, committing nothing past what was delivered; a repeated SIGTERM changes nothing', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(1_500, 0);
  const drainTimeoutMs = 2_000;
  const args = cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--drain-timeout-ms', String(drainTimeoutMs), '--batch-size', '100']);
  await produce(kafka.brokers, names.input, messages.slice(0, 500));
  const run = spawnEnricher(args, { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  runs.push(run);
  const port = await metricsPort(run);
  try {
    for (let i = 0; i < 600 && (await metricValue(port, 'dq_kafka_messages_produced_total')) < 500; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await metricValue(port, 'dq_kafka_messages_produced_total')).toBe(500);
    // The platform now answers after 60 s, far past the drain timeout; more messages arrive, with
    // house numbers not seen before (the engine answers repeated addresses from its cache).
    sandbox.setFaults({ batch: { latencyMs: 60_000 }, validate: { latencyMs: 60_000 } });
    const unseen = messages.slice(500).map((m, i) => {
      const value = JSON.parse(String(m.value)) as { address: Record<string, unknown> };
      value.address['houseNumber'] = String(1000 + i);
      return { ...m, value: JSON.stringify(value) };
    });
    await produce(kafka.brokers, names.input, unseen);
    for (let i = 0; i < 600 && (await metricValue(port, 'dq_kafka_in_flight_messages')) === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await metricValue(port, 'dq_kafka_in_flight_messages')).toBeGreaterThan(0);
    const signalled = Date.now();
    run.child.kill('SIGTERM');
    // Signalled again during the drain (the terminal closed: SIGHUP, handled as SIGTERM): the drain
    // goes on and the run still ends with its summary and exit code.
    await run.waitForLog(/"msg":"draining/, 10_000);
    run.child.kill('SIGHUP');
    expect(await run.exited).toEqual({ code: 75, signal: null });
    expect(run.stderr()).toMatch(/"msg":"signal received again: the drain is under way/);
    // Leaving the group and closing the clients take a few seconds on a loaded machine.
    expect(Date.now() - signalled).toBeLessThan(drainTimeoutMs + 15_000);
  } finally {
    sandbox.setFaults({});
  }
  expect(JSON.parse(run.stdout().trim().split('\n').pop()!)).toMatchObject({ exitCode: 75, reason: 'drain-timeout', error: { code: 'drain-timeout' } });
  expect(run.stderr()).toMatch(/dq-kafka: drain-timeout: the drain did not finish within --drain-timeout-ms 2000: \d+ messages/);

  const audit = await commitAudit(kafka.brokers, names, 1_500);
  expect(audit.missing).toEqual([]);
  // The first 500 were delivered and committed; the ones the platform never answered were not.
  expect(audit.delivered).toBeGreaterThanOrEqual(500);
  expect(audit.delivered).toBeLessThan(1_500);
  expect(audit.committed).toBeGreaterThanOrEqual(500);
  expect(audit.committed).toBeLessThan(1_500);
}, 180_000);

it('a second SIGINT (Ctrl-C pressed again) ends a drain that waits for a slow platform at once: exit 75 saying so, nothing committed past what was delivered', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(600, 0);
  // The default drain timeout (20 s): only the second SIGINT ends the drain sooner.
  const run = spawnEnricher(cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--batch-size', '100']), {
    DQ_BASE_URL: sandbox.url,
    DQ_API_KEY: DEFAULT_API_KEY,
  });
  runs.push(run);
  const port = await metricsPort(run);
  sandbox.setFaults({ batch: { latencyMs: 60_000 }, validate: { latencyMs: 60_000 } });
  try {
    await produce(kafka.brokers, names.input, messages);
    for (let i = 0; i < 600 && (await metricValue(port, 'dq_kafka_in_flight_messages')) === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await metricValue(port, 'dq_kafka_in_flight_messages')).toBeGreaterThan(0);
    run.child.kill('SIGINT');
    await run.waitForLog(/"msg":"draining/, 10_000);
    const again = Date.now();
    run.child.kill('SIGINT');
    expect(await run.exited).toEqual({ code: 75, signal: null });
    // Leaving the group and closing the clients, not the 20 s drain.
    expect(Date.now() - again).toBeLessThan(12_000);
  } finally {
    sandbox.setFaults({});
  }
  expect(run.stderr()).toMatch(/"msg":"second SIGINT: ending the drain now/);
  expect(JSON.parse(run.stdout().trim().split('\n').pop()!)).toMatchObject({ exitCode: 75, reason: 'drain-timeout', error: { code: 'drain-timeout' } });
  expect(run.stderr()).toMatch(
    /dq-kafka: drain-timeout: the drain was cut short by a second SIGINT: \d+ messages still under way were not delivered; they, and the messages handed back when the stop began, stay uncommitted/,
  );
  const audit = await commitAudit(kafka.brokers, names, 600, 6_000);
  expect(audit).toEqual({ missing: [], delivered: 0, committed: 0 });
}, 120_000);

it('two members stopped at the same moment while their group rebalances both exit 0 (one of them refused by the group as it leaves): nothing lost, nothing bought twice beyond what was in flight', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const N = 400;
  const { messages, bad } = dataset(N, 20);
  const store = await mkdtemp(join(tmpdir(), 'dq-kafka-stop-'));
  const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);
  const paidBefore = billable();
  const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
  const args = cliArgs(kafka.brokers, names, ['--metrics-port', '0', '--store', store, '--batch-size', '20']);
  const rebalances = (r: Running): number => r.stderr().split('"msg":"rebalancing: queued work handed back"').length - 1;
  const assignments = (r: Running): number => r.stderr().split('"msg":"partitions assigned"').length - 1;
  const until = async (what: string, done: () => boolean, ms = 30_000): Promise<void> => {
    for (const end = Date.now() + ms; !done(); await new Promise((r) => setTimeout(r, 20)))
      if (Date.now() > end) throw new Error(`${what} within ${ms} ms; logs:\n${[a, b, c].map((r) => (r ? tail(r).slice(-1500) : '')).join('\n---\n')}`);
  };
  let a: Running | undefined;
  let b: Running | undefined;
  let c: Running | undefined;
  // The end of a member's log, without kafkajs's debug lines (B logs at debug level).
  const tail = (r: Running): string =>
    r
      .stderr()
      .split('\n')
      .filter((l) => !l.startsWith('{"level":"debug"'))
      .join('\n')
      .slice(-3000);
  try {
    await produce(kafka.brokers, names.input, messages.slice(0, 100));
    a = spawnEnricher(args, env);
    runs.push(a);
    const portA = await metricsPort(a);
    await waitUntilUp(a, portA);
    // B (debug log: its JoinGroup requests are seen) joins; A rejoins with it.
    b = spawnEnricher([...args, '--log-level', 'debug'], env);
    runs.push(b);
    await waitUntilUp(b, await metricsPort(b));
    await until('A did not rejoin with B', () => assignments(a!) >= 2);

    // A third instance C joins (a rolling restart's new instance): A and B both rejoin. C, then B,
    // are paused (SIGSTOP: a loaded machine) once their JoinGroup is sent, so the group's leader
    // (A, the oldest member) syncs first and B's SyncGroup comes after it, as happened in CI.
    const [rebalancesA, rebalancesB, logB] = [rebalances(a), rebalances(b), b.stderr().length];
    c = spawnEnricher(args, env);
    runs.push(c);
    await until('A did not see the rebalance C started', () => rebalances(a!) > rebalancesA);
    c.child.kill('SIGSTOP');
    await until('B did not see the rebalance C started', () => rebalances(b!) > rebalancesB);
    await until('B sent no JoinGroup', () => b!.stderr().slice(logB).includes('"msg":"Request JoinGroup'));
    b.child.kill('SIGSTOP');
    // The leader's sync ends the rebalance (about 5 s after C's join); then A takes new messages,
    // whose calls the platform answers slowly, so A's drain lasts past B's SyncGroup.
    const assignedA = assignments(a);
    await until('A was not assigned partitions again', () => assignments(a!) > assignedA);
    sandbox.setFaults({ batch: { latencyMs: 2_000 }, validate: { latencyMs: 2_000 } });
    await produce(kafka.brokers, names.input, messages.slice(100));
    let inFlight = 0;
    for (let i = 0; i < 300 && (inFlight = await metricValue(portA, 'dq_kafka_in_flight_messages')) === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(inFlight, tail(a)).toBeGreaterThan(0);

    // Stopped at the same moment (B sees its SIGTERM as it wakes up).
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    b.child.kill('SIGCONT');
    const [exitA, exitB] = await Promise.all([exitWithin(a, 40_000), exitWithin(b, 40_000)]);
    expect(exitA, `A exited ${exitA}:\n${tail(a)}`).toBe(0);
    expect(exitB, `B exited ${exitB}:\n${tail(b)}`).toBe(0);
    // What made B exit 75: the mock cluster refuses a SyncGroup that comes after the leader's (a
    // broker answers it with the assignment), and kafkajs gives up the consumer as it leaves.
    if (!kafka.external) expect(b.stderr(), tail(b)).toMatch(/"msg":"the group refused the consumer during the stop \(a rebalance\)/);
    sandbox.setFaults({});

    // C, the member that gets their partitions, reads again what they did not commit.
    c.child.kill('SIGCONT');
    const { outs, dead } = await readResults(kafka.brokers, names, N - bad.size, bad.size, 90_000);
    c.child.kill('SIGTERM');
    expect(await exitWithin(c, 40_000), tail(c)).toBe(0);

    // Every message where it belongs: the good ones in the output, the bad ones in the DLQ.
    const inputs = await inputOffsets(kafka.brokers, names.input, N);
    const seq = (m: { headers: Record<string, string> }): number => Number(m.headers['x-seq']);
    const outSources = sourceOffsets(outs, []);
    const dlqSources = sourceOffsets([], dead);
    const misplaced = inputs.filter((m) => {
      const at = `${m.partition}:${m.offset}`;
      return bad.has(seq(m)) ? !dlqSources.has(at) || outSources.has(at) : !outSources.has(at) || dlqSources.has(at);
    });
    expect(misplaced.map((m) => `${m.partition}:${m.offset} (x-seq ${seq(m)})`)).toEqual([]);
    // Answers bought during the drain but not delivered came from the store: at most the calls
    // under way at the stop were bought again.
    expect(billable() - paidBefore).toBeLessThanOrEqual(N + inFlight);
  } finally {
    sandbox.setFaults({});
    for (const r of [b, c]) if (r && r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGCONT');
    await rm(store, { recursive: true, force: true });
  }
}, 240_000);

it('a consumer crash during a stop counts as the group refusing the member only for answers that end its place in the group, not for brokers out of reach', () => {
  const answer = (type: string, retriable = false): Error => new KafkaJSProtocolError({ type, code: 0, retriable, message: type } as unknown as Error);
  // How kafkajs crashes after a refused rejoin: its retrier gives the answer up wrapped.
  const givenUp = (e: Error): Error => Object.assign(new KafkaJSNonRetriableError(e), { cause: e });
  const settings = { ssl: undefined, sasl: undefined };
  expect(refusedByGroup(givenUp(answer('REBALANCE_IN_PROGRESS')), settings)).toBe(true);
  expect(refusedByGroup(givenUp(answer('ILLEGAL_GENERATION')), settings)).toBe(true);
  expect(refusedByGroup(answer('UNKNOWN_MEMBER_ID'), settings)).toBe(true);
  // The mock cluster's answer to a SyncGroup that comes after the leader's.
  expect(refusedByGroup(givenUp(answer('INVALID_REQUEST')), settings)).toBe(true);
  expect(refusedByGroup(givenUp(answer('GROUP_COORDINATOR_NOT_AVAILABLE', true)), settings)).toBe(false);
  expect(refusedByGroup(givenUp(answer('GROUP_AUTHORIZATION_FAILED')), settings)).toBe(false);
  expect(
    refusedByGroup(
      new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('connect ECONNREFUSED 127.0.0.1:9092'), { retryCount: 5, retryTime: 1000 }),
      settings,
    ),
  ).toBe(false);
});

it('exits 3 on an exhausted quota without committing offsets it did not deliver', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const { messages } = dataset(2_000, 0);
  await produce(kafka.brokers, names.input, messages);
  const run = spawnEnricher(cliArgs(kafka.brokers, names, ['--batch-size', '50']), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: QUOTA_KEY });
  runs.push(run);
  const exit = await run.exited;
  expect(exit.code).toBe(3);
  expect(JSON.parse(run.stdout().trim().split('\n').pop()!)).toMatchObject({ exitCode: 3, reason: 'fatal', error: { code: 'quota-exhausted' } });
  expect(run.stderr()).not.toContain(QUOTA_KEY);

  const inputs = await inputOffsets(kafka.brokers, names.input, 2_000);
  const committed = await committedOffsets(kafka.brokers, names.group, names.input);
  const outs = await readTopic(kafka.brokers, names.output, () => false, 8_000);
  const covered = sourceOffsets(outs, []);
  expect(committedButMissing(committed, inputs, covered)).toEqual([]);
  const committedCount = [...committed.values()].reduce((n, o) => n + (o > 0n ? Number(o) : 0), 0);
  expect(committedCount).toBeLessThan(2_000);
}, 180_000);
