import { readdir, readFile, readlink } from 'node:fs/promises';
import { afterEach, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import {
  cliArgs,
  committedOffsets,
  dataset,
  killIfRunning,
  metricsPort,
  metricValue,
  produce,
  readResults,
  spawnEnricher,
  uniqueGroup,
  uniqueTopic,
} from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';

// Defaults no other test leaves out while asserting their effect: --max-in-flight (5000 messages
// taken but not committed), --concurrency (32 HTTP calls in flight), --batch-size (500 messages per
// commit), --metrics-port (off: no port is listened on) and --log-level (info). The sandbox has no rate limit and the runs that measure pass --rate-limit 0,
// so nothing but the defaults under test holds the calls back.
const kafka = useKafka();
const sandbox = useSandbox({ accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] });
let run: Running | undefined;
afterEach(() => {
  killIfRunning(run);
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
