import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { dataset, killIfRunning, produce, readResults, requiredArgs, spawnEnricher, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Names, Running, TestKafka } from '@dq/test-support/kafka';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { createTopics } from './topics.js';

// dq-kafka as a user starts it: only the required flags, its output and DLQ topics created
// beforehand. Every other test passes at least --session-timeout-ms and --create-topics (cliArgs
// of ./topics.ts), and the store tests pass --store; here the
// session timeout, batch size, rate limit, store folder ($XDG_CACHE_HOME/dq-connectors/store,
// test/support/isolated-store.ts gives each test its own), output member, start position and
// drain timeout are the defaults. The sandbox runs with its own config: the contract's rate limits.
const N = 600;

let kafka: TestKafka;
let sandbox: SandboxProcess;
const runs: Running[] = [];

beforeAll(async () => {
  [kafka, sandbox] = await Promise.all([startKafka(), startSandboxProcess()]);
});
afterAll(async () => {
  runs.forEach(killIfRunning);
  await Promise.all([kafka?.stop(), sandbox?.stop()]);
});

/** Starts dq-kafka with the required flags, waits for every input offset in the output or DLQ, stops it with SIGTERM. */
async function enrichAll(names: Names, bad: number) {
  // Output and DLQ topics exist, as dq-kafka without --create-topics requires.
  await createTopics(kafka.brokers, [names.output, names.dlq]);
  const run = spawnEnricher(requiredArgs(kafka.brokers, names), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  runs.push(run);
  const results = await readResults(kafka.brokers, names, N - bad, bad);
  run.child.kill('SIGTERM');
  const exit = await run.exited;
  return { ...results, exit, stderr: run.stderr() };
}

describe('dq-kafka enrich with no optional flag', () => {
  it('reads the topic from its start, adds a "dq" member, gets no 429, exits 0 on SIGTERM, and a second group is answered from the default store', async () => {
    const input = uniqueTopic('in');
    const { messages, bad } = dataset(N, 20);
    // Produced before the enricher starts: a new group must start at the beginning, not the end.
    await produce(kafka.brokers, input, messages);

    const first = await enrichAll({ input, output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() }, bad.size);
    expect(first.exit.code, first.stderr.slice(-2000)).toBe(0);
    expect(first.dead).toHaveLength(bad.size);
    for (const o of first.outs) {
      const value = JSON.parse(o.value!) as { id: number; dq?: { status: string; requestId?: string } };
      expect(value.id).toBe(Number(o.headers['x-seq']));
      expect(['accepted', 'review', 'invalid']).toContain(value.dq?.status);
      expect(value.dq?.requestId).toBeTruthy();
    }
    const stats = await sandbox.stats();
    const tooMany = Object.values(stats.requests).reduce((sum, r) => sum + (r.byStatus['429'] ?? 0), 0);
    expect(tooMany).toBe(0); // the default rate limit keeps under the platform's
    const paid = await sandbox.billable();
    expect(paid).toBeGreaterThan(0);

    // Another group over the same topic (e.g. a second pipeline): every answer is in the default store.
    const second = await enrichAll({ input, output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() }, bad.size);
    expect(second.exit.code, second.stderr.slice(-2000)).toBe(0);
    expect(second.outs.length).toBeGreaterThanOrEqual(N - bad.size);
    expect(await sandbox.billable()).toBe(paid);
  }, 120_000);
});
