import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { cliArgs, killIfRunning, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { useKafka } from '@dq/test-support/use';

// A consumer runs for hours: a shared budget or store it cannot use must stop it at start, not at
// the first message, which may come long after a deployment looked healthy.

const kafka = useKafka();
let sandbox: SandboxProcess;
const runs: Running[] = [];

beforeAll(async () => {
  sandbox = await startSandboxProcess();
});
afterAll(async () => {
  runs.forEach(killIfRunning);
  await sandbox?.stop();
});

/** dq-kafka on an idle topic with `extra` flags: its exit code (or 'running' after 20 s) and stderr. */
async function startIdle(extra: string[]): Promise<{ code: number | null | 'running'; stderr: string }> {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const run = spawnEnricher(cliArgs(kafka.brokers, names, extra), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  runs.push(run);
  const exited = await Promise.race([run.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 20_000))]);
  return { code: exited === 'running' ? exited : exited.code, stderr: run.stderr() };
}

it('--budget whose database cannot be reached, on an idle topic: exit 75 at start, before joining the group', async () => {
  // The default rate limit: an endpoint without one (--rate-limit 0) has nothing to share.
  const { code, stderr } = await startIdle(['--budget', 'postgres://etl:budget-pw-7d1e@127.0.0.1:1/dq']);
  expect(code === 'running' ? `still running after 20 s: ${stderr.slice(-1500)}` : code).toBe(75);
  // The last line says what to do, as the log line of the stop does.
  expect(stderr).toMatch(
    /^dq-kafka: budget-unreachable: the shared rate budget's database could not be reached \(ECONNREFUSED\); --budget off runs with a budget of this process only instead; restart once the budget's database answers again \(what was delivered is committed, and answers already paid for are not bought again\)$/m,
  );
  expect(stderr).not.toContain('"msg":"consuming"');
  expect(stderr).not.toContain('"msg":"partitions assigned"');
  expect(stderr).not.toContain('budget-pw-7d1e');
  expect(stderr).not.toMatch(/\n\s+at /);
}, 60_000);

it('--store whose database cannot be reached: exit 75 at start, logged as a stop to restart from once it answers, not as a failure', async () => {
  const { code, stderr } = await startIdle(['--store', 'postgres://etl:store-pw-3b9c@127.0.0.1:1/dq']);
  expect(code === 'running' ? `still running after 20 s: ${stderr.slice(-1500)}` : code).toBe(75);
  expect(stderr).toContain(
    `"msg":"run stopped: the result store's database could not be reached; restart once the store's database answers again (what was delivered is committed, and answers already paid for are not bought again)"`,
  );
  expect(stderr).not.toContain('"msg":"run failed"');
  expect(stderr).not.toContain('"msg":"consuming"');
  expect(stderr).not.toContain('store-pw-3b9c');
}, 60_000);
