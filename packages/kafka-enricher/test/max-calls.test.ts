import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { cliArgs, startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { TestKafka } from '@dq/test-support/kafka';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import {
  committedButMissing,
  committedOffsets,
  inputOffsets,
  killIfRunning,
  produce,
  readResults,
  readTopic,
  sourceOffsets,
  spawnEnricher,
} from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

let kafka: TestKafka;
let sandbox: SandboxProcess;
const runs: Running[] = [];

beforeAll(async () => {
  [kafka, sandbox] = await Promise.all([
    startKafka(),
    // No rate limit: the cap, not the clock, must stop the run.
    startSandboxProcess({ accounts: [{ id: 'cap', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0, validate: 0 } }] }),
  ]);
});
afterAll(async () => {
  runs.forEach(killIfRunning);
  await Promise.all([kafka?.stop(), sandbox?.stop()]);
});

it('--max-calls: stops at the cap with exit 5, commits only what it delivered, and a restart delivers the rest', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const N = 1000;
  await produce(
    kafka.brokers,
    names.input,
    Array.from({ length: N }, (_, i) => ({
      key: `k${i % 50}`,
      value: JSON.stringify({ id: i, address: { street: 'Lindenweg', houseNumber: String(i + 1), postalCode: '10115', locality: 'Berlin', country: 'DE' } }),
    })),
  );
  const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
  const first = spawnEnricher(cliArgs(kafka.brokers, names, ['--max-calls', '300', '--batch-size', '50', '--rate-limit', '0']), env);
  runs.push(first);
  expect((await first.exited).code, first.stderr().slice(-2000)).toBe(5);
  // Never a call past the cap; the calls under way when it was reached were answered and delivered.
  const billed = await sandbox.billable();
  expect(billed).toBe(300);
  expect(first.stderr()).toMatch(/max-calls-reached/);
  expect(first.stderr()).toContain(
    '"msg":"run stopped: the spending cap (--max-calls) was reached; restart to continue (what was delivered is committed, and answers already paid for are not bought again), with a new --max-calls or none"',
  );
  expect(first.stderr()).not.toMatch(/\n\s+at /);
  const line = JSON.parse(first.stdout().trim().split('\n').pop()!) as { exitCode: number; budget: { billableCalls: number; maxCalls: number } };
  expect(line).toMatchObject({ exitCode: 5, budget: { billableCalls: 300, maxCalls: 300 } });

  // Nothing committed that is not in the output.
  const inputs = await inputOffsets(kafka.brokers, names.input, N);
  const committed = await committedOffsets(kafka.brokers, names.group, names.input);
  const delivered = await readTopic(kafka.brokers, names.output, () => false, 5_000);
  expect(delivered.length).toBeLessThanOrEqual(300);
  expect(committedButMissing(committed, inputs, sourceOffsets(delivered, []))).toEqual([]);

  const second = spawnEnricher(cliArgs(kafka.brokers, names), env);
  runs.push(second);
  const { outs } = await readResults(kafka.brokers, names, N, 0);
  expect(sourceOffsets(outs, []).size).toBe(N);
  second.child.kill('SIGTERM');
  expect((await second.exited).code).toBe(0);
  // Each input paid for once over both runs: none of the calls under way at the cap was cut and bought again.
  expect(await sandbox.billable()).toBe(N);
}, 180_000);

it('--budget whose database cannot be reached: exit 75 before any call, the log says to restart once it answers, nothing committed, no password shown', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, names.input, [
    { key: 'k1', value: JSON.stringify({ id: 1, address: { street: 'Lindenweg', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' } }) },
  ]);
  const before = await sandbox.billable();
  // The default rate limit: an endpoint without one (--rate-limit 0) has nothing to share.
  const run = spawnEnricher(cliArgs(kafka.brokers, names, ['--budget', 'postgres://etl:budget-pw-51c2@127.0.0.1:1/dq']), {
    DQ_BASE_URL: sandbox.url,
    DQ_API_KEY: DEFAULT_API_KEY,
  });
  runs.push(run);
  const exited = await run.exited;
  const stderr = run.stderr();
  expect(exited.code, stderr.slice(-2000)).toBe(75);
  expect(stderr).toMatch(/^dq-kafka: budget-unreachable: the shared rate budget's database could not be reached/m);
  expect(stderr).toContain(
    `"msg":"run stopped: the shared rate budget's database could not be reached; restart once the budget's database answers again (what was delivered is committed, and answers already paid for are not bought again)"`,
  );
  expect(stderr).not.toMatch(/restart after the time it names|run stopped by the platform/);
  expect(stderr).not.toContain('budget-pw-51c2');
  expect(stderr).not.toMatch(/\n\s+at /);
  expect(await sandbox.billable()).toBe(before);
  expect([...(await committedOffsets(kafka.brokers, names.group, names.input)).values()].every((o) => o < 0n)).toBe(true);
}, 90_000);
