import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { cliArgs, killIfRunning, produce, readResults, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { useKafka } from '@dq/test-support/use';

// --rate-limit and --budget left out: dq-kafka paces address calls at the contract's 100 per second
// and company searches at 10 per second (README "Rate limits"), on a budget of its own. The
// sandbox here enforces no limit (defaults.test.ts runs against one that does: no 429), so the
// pacing seen is the client's own. The sandbox runs in a process of its own and is polled over
// HTTP, so this process's event loop does not bunch up the calls it counts.
const kafka = useKafka();
let sandbox: SandboxProcess;
let run: Running | undefined;

beforeAll(async () => {
  sandbox = await startSandboxProcess({ accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0, company: 0 } }] });
});
afterAll(async () => {
  killIfRunning(run);
  await sandbox?.stop();
});

/**
 * Polls the sandbox's count of `endpoint` requests until `done` settles. Returns bounds on the time
 * from the first request to the `n`-th: `atLeast` (the last poll before it saw the n-th minus the
 * first poll that saw one) and `atMost` (the first poll that saw the n-th minus the last poll before one).
 */
async function callSpan(endpoint: string, n: number, done: Promise<unknown>): Promise<{ atLeast: number; atMost: number }> {
  let finished = false;
  void done.finally(() => (finished = true));
  const samples: Array<{ at: number; count: number }> = [];
  for (;;) {
    // Once `done` settled every call was answered: the poll after it sees them all.
    const last = finished;
    const sent = performance.now();
    const count = (await sandbox.stats()).requests[endpoint]?.total ?? 0;
    samples.push({ at: (sent + performance.now()) / 2, count });
    if (last) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await done;
  const firstSeen = samples.findIndex((s) => s.count > 0);
  const allSeen = samples.findIndex((s) => s.count >= n);
  expect(firstSeen).toBeGreaterThan(0); // none before the run
  const atLeast = allSeen > firstSeen ? samples[allSeen - 1]!.at - samples[firstSeen]!.at : 0;
  return { atLeast, atMost: samples[allSeen]!.at - samples[firstSeen - 1]!.at };
}

/** Produces `values`, runs dq-kafka (required flags, `extra`, `map`) until each is in the output; the span of its calls to `endpoint`. */
async function enrich(values: object[], endpoint: string, extra: string[], map?: string) {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(
    kafka.brokers,
    names.input,
    values.map((v, i) => ({ key: `k${i % 8}`, value: JSON.stringify(v) })),
  );
  run = spawnEnricher(cliArgs(kafka.brokers, names, extra, map), { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
  const span = await callSpan(endpoint, values.length, readResults(kafka.brokers, names, values.length, 0, 90_000));
  run.child.kill('SIGTERM');
  expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
  const last = JSON.parse(run.stdout().trim().split('\n').pop()!) as { budget: { scope: string; billableCalls: number } };
  return { span, budget: last.budget };
}

describe('dq-kafka enrich without --rate-limit and --budget', () => {
  it('sends 300 address calls at about 100 per second (2-10 s from first to last), on a budget of its own', async () => {
    const N = 300;
    const { span, budget } = await enrich(
      Array.from({ length: N }, (_, i) => ({
        id: i,
        address: { street: 'Lindenweg', houseNumber: String(i + 1), postalCode: '10115', locality: 'Berlin', country: 'DE' },
      })),
      'batch',
      [],
    );
    // At most 100 in any second: calls 1, 101 and 201 start three seconds, so the 300th comes 2 s after the first at the earliest.
    expect(span.atLeast).toBeGreaterThanOrEqual(1_900);
    // Not a rate far below the contract's (10/s would take 30 s).
    expect(span.atMost).toBeLessThan(10_000);
    expect(budget).toMatchObject({ scope: 'local', billableCalls: N });
  }, 90_000);

  it('--mode company: sends 30 company searches at 10 per second (2.8-6 s from first to last)', async () => {
    const N = 30;
    const { span } = await enrich(
      Array.from({ length: N }, (_, i) => ({ id: i, firm: { name: `Beispiel ${i} GmbH` } })),
      'company',
      ['--mode', 'company'],
      'company=/firm/name',
    );
    // 29 intervals of 0.1 s; at the address rate (100/s) they took 0.3 s.
    expect(span.atLeast).toBeGreaterThanOrEqual(2_700);
    expect(span.atMost).toBeLessThan(6_000);
  }, 90_000);
});
