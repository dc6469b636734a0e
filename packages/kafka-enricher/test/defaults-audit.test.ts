import { cliArgs } from '@dq/test-support/kafka';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { afterEach, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import {
  commitAudit,
  committedOffsets,
  dataset,
  killIfRunning,
  metricsPort,
  metricValue,
  produce,
  readResults,
  requiredArgs,
  spawnEnricher,
  uniqueGroup,
  uniqueTopic,
} from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox, useTempDir } from '@dq/test-support/use';
import { createTopics } from './topics.js';

// Defaults no other test leaves out while asserting their effect: --max-in-flight (5000 messages
// taken but not committed), --concurrency (32 HTTP calls in flight), --batch-size (500 messages per
// commit), --metrics-port (off: no port is listened on), --log-level (info), --retry-max-ms (600 s),
// --drain-timeout-ms (20 s), --client-id (dq-kafka), --session-timeout-ms (30 s) and --threads (one
// per core beyond the first, none on 1-2 cores). The sandbox has no rate limit and the runs that
// measure pass --rate-limit 0, so nothing but the defaults under test holds the calls back.
const kafka = useKafka();
const sandbox = useSandbox({ accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] });
const reportDir = useTempDir('dq-kafka-reports-');
let run: Running | undefined;
let second: Running | undefined;
afterEach(() => {
  killIfRunning(run);
  killIfRunning(second);
  sandbox.setFaults({});
});

const names = () => ({ input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() });

it('without --max-in-flight and --concurrency, takes up to 5000 messages at once and keeps 32 calls in flight', async () => {
  const topic = names();
  await produce(kafka.brokers, topic.input, dataset(6_000, 0).messages);
  // Answers come 3 s late: the messages taken pile up until the in-flight limit holds them back.
  sandbox.setFaults({ batch: { latencyMs: 3_000 } });
  sandbox.resetStats();
  run = spawnEnricher(cliArgs(kafka.brokers, topic, ['--metrics-port', '0', '--rate-limit', '0']), sandbox.env());
  const port = await metricsPort(run);
  let maxInFlight = 0;
  let maxPaused = 0;
  const sample = async () => {
    maxInFlight = Math.max(maxInFlight, await metricValue(port, 'dq_kafka_in_flight_messages'));
    maxPaused = Math.max(maxPaused, await metricValue(port, 'dq_kafka_paused_partitions'));
    await new Promise((r) => setTimeout(r, 200));
  };
  // Until it holds back (on a loaded machine taking 6,000 messages takes a while), then a second more.
  const deadline = Date.now() + 45_000;
  while (!(maxInFlight > 4_000 && maxPaused > 0) && Date.now() < deadline) await sample();
  for (let i = 0; i < 5; i += 1) await sample();
  expect(maxInFlight).toBeLessThanOrEqual(5_000);
  expect(maxInFlight).toBeGreaterThan(4_000); // 6,000 were there to take: the limit, not the topic, stopped it
  expect(maxPaused).toBeGreaterThan(0);
  expect(sandbox.stats().concurrent['batch']?.max).toBe(32);
}, 90_000);

/** `n` messages, each with an address of its own (one call each: none is answered from the in-run cache). */
function distinctMessages(n: number) {
  return dataset(n, 0).messages.map((m, i) => {
    const value = JSON.parse(String(m.value)) as { address: Record<string, unknown> };
    return { ...m, value: JSON.stringify({ ...value, address: { ...value.address, houseNumber: String(i + 1) } }) };
  });
}

it('without --batch-size, commits a partition in steps of 500 messages', async () => {
  const topic = names();
  const N = 1_200;
  // One key: every message in one partition, produced in two sends (1,000 and 200), so the
  // enricher's fetches hold more than a batch and only --batch-size splits them.
  await produce(
    kafka.brokers,
    topic.input,
    distinctMessages(N).map((m) => ({ ...m, key: 'one' })),
  );
  sandbox.setFaults({ batch: { latencyMs: 100 } });
  run = spawnEnricher(cliArgs(kafka.brokers, topic, ['--rate-limit', '0']), sandbox.env());
  const reading = readResults(kafka.brokers, topic, N, 0);
  let finished = false;
  void reading.finally(() => (finished = true));
  const seen = new Set<bigint>();
  while (!finished) {
    for (const offset of (await committedOffsets(kafka.brokers, topic.group, topic.input)).values()) if (offset > 0n) seen.add(offset);
    await new Promise((r) => setTimeout(r, 50));
  }
  await reading;
  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
  expect([...(await committedOffsets(kafka.brokers, topic.group, topic.input)).values()].filter((o) => o > 0n)).toEqual([BigInt(N)]);
  seen.delete(BigInt(N));
  expect([...seen].sort((a, b) => Number(a - b))).toEqual([500n, 1_000n]);
}, 60_000);

/** TCP ports `pid` listens on (Linux: its socket inodes in the kernel's LISTEN table). */
async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) inodes.add(m[1]!);
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = (await readFile(table, 'utf8').catch(() => '')).split('\n').slice(1);
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9] ?? '')) ports.push(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

it('without --metrics-port and --log-level, serves no metrics (it listens on no port) and logs at info, not debug', async () => {
  const topic = names();
  await produce(kafka.brokers, topic.input, dataset(50, 0).messages);
  run = spawnEnricher(cliArgs(kafka.brokers, topic), sandbox.env());
  // Working: it has joined the group. The line is logged at info: the level is on.
  await run.waitForLog(/"level":"info".*"msg":"partitions assigned"/, 30_000);
  expect(await listeningPorts(run.child.pid!)).toEqual([]);
  expect(run.stderr()).not.toMatch(/metrics listening/);
  expect(run.stderr()).not.toMatch(/"level":"debug"/); // kafkajs's own debug lines stay out
  run.child.kill('SIGTERM');
  expect((await run.exited).code).toBe(0);
}, 60_000);

/** Waits until `done()` holds, looking every 100 ms; false when `timeoutMs` passed first. */
async function until(done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** The JSON log lines of `run` whose message is `msg`. */
function logLines<T>(run: Running, msg: string): Array<T & { time: string }> {
  const marker = `"msg":${JSON.stringify(msg)}`;
  return run
    .stderr()
    .split('\n')
    .filter((l) => l.includes(marker))
    .map((l) => JSON.parse(l) as T & { time: string });
}

it('without --retry-max-ms, --drain-timeout-ms and --client-id: an outage is retried with 600 s to go, a stop during it hands the retried batch back and exits 0 committing only what was delivered; kafkajs sends the client id dq-kafka', async () => {
  const topic = names();
  const messages = distinctMessages(500);
  await produce(kafka.brokers, topic.input, messages.slice(0, 300));
  // At debug, kafkajs logs each request it sends the brokers with the client id in its header.
  run = spawnEnricher(cliArgs(kafka.brokers, topic, ['--metrics-port', '0', '--log-level', 'debug']), sandbox.env());
  const port = await metricsPort(run);
  expect(await until(async () => (await metricValue(port, 'dq_kafka_messages_produced_total')) >= 300, 60_000)).toBe(true);
  const sent = run
    .stderr()
    .split('\n')
    .filter((l) => /"msg":"Request \w+\(key: \d+/.test(l))
    .map((l) => (JSON.parse(l) as { clientId?: string }).clientId);
  expect(sent.length).toBeGreaterThan(0);
  expect(new Set(sent)).toEqual(new Set(['dq-kafka']));

  // An outage: every batch call answers 503, for the 200 messages that come now.
  sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [503] } });
  await produce(kafka.brokers, topic.input, messages.slice(300));
  await run.waitForLog(/"msg":"partition paused: retrying the batch"/, 60_000);
  const [paused] = logLines<{ retryMaxMs: number; givesUpAt: string }>(run, 'partition paused: retrying the batch');
  expect(paused!.retryMaxMs).toBe(600_000);
  // Counted from the batch's first attempt, a few seconds (the transport's own retries) before this line.
  const toGo = Date.parse(paused!.givesUpAt) - Date.parse(paused!.time);
  expect(toGo).toBeGreaterThan(540_000);
  expect(toGo).toBeLessThanOrEqual(600_000);

  // A stop while the batch is still being retried: the attempt under way ends, nothing more is
  // repeated, and the batch is handed back uncommitted, well within the 20 s drain.
  const signalled = Date.now();
  run.child.kill('SIGTERM');
  const exited = await run.exited;
  const tail = () =>
    run!
      .stderr()
      .trim()
      .split('\n')
      .filter((l) => !l.includes('"level":"debug"'))
      .slice(-12)
      .join('\n');
  expect(exited, `the stop after ${Date.now() - signalled} ms; the last lines:\n${tail()}\n${run.stdout()}`).toEqual({ code: 0, signal: null });
  expect(Date.now() - signalled).toBeLessThan(20_000);
  expect(JSON.parse(run.stdout().trim().split('\n').pop()!)).toMatchObject({ exitCode: 0, reason: 'stop', records: 300 });

  // The 300 answered before the outage were delivered and committed; the 200 after it were neither.
  expect(await commitAudit(kafka.brokers, topic, 500, 6_000)).toEqual({ missing: [], delivered: 300, committed: 300 });
}, 120_000);

/** Partitions a member holds now: those of its last assignment, none while a rebalance it heard of is on. */
function holding(member: Running): number[] {
  const text = member.stderr();
  const assigned = text.lastIndexOf('"msg":"partitions assigned"');
  if (assigned < 0 || text.lastIndexOf('"msg":"rebalancing: queued work handed back"') > assigned) return [];
  const [last] = logLines<{ assignment: Record<string, number[]> }>(member, 'partitions assigned').slice(-1);
  return Object.values(last!.assignment).flat();
}

/** Worker threads of a running dq-kafka, from the Node diagnostic report it writes on SIGUSR2. */
async function workerThreads(member: Running): Promise<number> {
  const pid = member.child.pid!;
  member.child.kill('SIGUSR2');
  let file: string | undefined;
  await until(async () => {
    file = (await readdir(reportDir)).find((f) => f.includes(`.${pid}.`) && f.endsWith('.json'));
    if (file === undefined) return false;
    return (await readFile(join(reportDir, file), 'utf8')).trimEnd().endsWith('}');
  }, 20_000);
  const report = JSON.parse(await readFile(join(reportDir, file!), 'utf8')) as { workers: unknown[] };
  return report.workers.length;
}

it('without --session-timeout-ms and --threads: a killed member of a group is missed after 30 s, and the engine runs one worker thread per core beyond the first (none on 1-2 cores)', async () => {
  const topic = names();
  await produce(kafka.brokers, topic.input, distinctMessages(400));
  // Node writes a diagnostic report, which lists the process's worker threads, on SIGUSR2.
  const env = {
    ...sandbox.env(),
    NODE_OPTIONS: [process.env['NODE_OPTIONS'], '--report-on-signal', `--report-directory=${reportDir}`].filter(Boolean).join(' '),
  };
  // Output and DLQ topics exist, as dq-kafka without --create-topics requires.
  await createTopics(kafka.brokers, [topic.output, topic.dlq]);
  run = spawnEnricher(requiredArgs(kafka.brokers, topic), env);
  second = spawnEnricher(requiredArgs(kafka.brokers, topic), env);
  const [first, survivor] = [run, second];
  // Each step has a bound of its own, within the test's: a step that stalls fails naming itself,
  // with what the two members logged last.
  const lastLines = () => [first, survivor].map((m, i) => `member ${i + 1}:\n  ${m.stderr().trim().split('\n').slice(-8).join('\n  ')}`).join('\n');
  // Every message delivered (each member made calls, so its threads started) ... Within 120 s: on a
  // quiet run it takes seconds, but a member whose consumer crashed at its start (the test broker
  // sometimes answers a SyncGroup with an error kafkajs does not retry) rejoins under a new member
  // id, and the test broker holds each rebalance of a non-empty group open for the session timeout
  // less 1 s (29 s) waiting for members to rejoin; two such in a row have been seen.
  const delivered = await readResults(kafka.brokers, topic, 400, 0, 120_000);
  expect(delivered.outs.length, `not every message was delivered within 120 s:\n${lastLines()}`).toBeGreaterThanOrEqual(400);
  // ... and the group settled: the two hold the 4 partitions between them.
  const settled = () => {
    const held = [...holding(first), ...holding(survivor)];
    return holding(first).length > 0 && holding(survivor).length > 0 && held.length === 4 && new Set(held).size === 4;
  };
  // Up to a rebalance timeout (kafkajs's 60 s) more when a member's consumer crashed and restarted
  // meanwhile (the test broker sometimes answers a SyncGroup with an error kafkajs does not retry).
  expect(await until(settled, 90_000), `the group did not settle on 4 partitions:\n${lastLines()}`).toBe(true);

  const cores = availableParallelism();
  const expected = cores <= 2 ? 0 : cores - 1; // README: one per core beyond the first, 0 on 1-2 cores
  expect(await workerThreads(first)).toBe(expected);
  expect(await workerThreads(survivor)).toBe(expected);

  // SIGKILL: the member cannot leave the group; the broker misses it once its session times out.
  const rebalances = () => logLines(survivor, 'rebalancing: queued work handed back').length;
  const before = rebalances();
  first.child.kill('SIGKILL');
  const killed = Date.now();
  expect(await until(() => rebalances() > before, 50_000), `the survivor heard of no rebalance:\n${lastLines()}`).toBe(true);
  const missedAfter = Date.now() - killed;
  // Its last heartbeat came up to 3 s before the kill, and the survivor hears of the rebalance at its
  // next heartbeat (every 3 s): 27-33 s, with some slack for a loaded machine.
  expect(missedAfter).toBeGreaterThan(24_000);
  expect(missedAfter).toBeLessThan(45_000);
}, 330_000);
