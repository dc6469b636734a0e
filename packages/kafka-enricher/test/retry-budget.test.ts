import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';
import { cliArgs, committedOffsets, killIfRunning, produce, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';

// --retry-max-ms bounds how long a batch may stay unavailable. A repeat that starts shortly before
// the budget ends must not run on for a call's whole timeout (30 s, and the transport's retries)
// past it: a scheduler waiting for exit 75 would wait that much longer, and the platform would be
// called past the budget.

const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;
afterAll(() => {
  killIfRunning(run);
  sandbox.setFaults({});
});

it('a repeat whose calls hang ends at --retry-max-ms with exit 75, not after the calls time out', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  const address = { street: 'Lindenweg', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' };
  await produce(
    kafka.brokers,
    names.input,
    Array.from({ length: 5 }, (_, i) => ({ key: 'k', value: JSON.stringify({ id: i, address: { ...address, houseNumber: String(i + 1) } }) })),
  );
  const retryMaxMs = 15_000;
  // First attempt: 503s, answered at once; every later call is answered only after 60 s.
  sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [503] } });
  run = spawnEnricher(cliArgs(kafka.brokers, names, ['--retry-max-ms', String(retryMaxMs), '--store', 'off']), sandbox.env());
  await run.waitForLog(/partition paused: retrying the batch/, 60_000);
  const paused = Date.now();
  sandbox.setFaults({ batch: { latencyMs: 60_000 } });

  // The budget counts from the first attempt, which ended before the pause was logged.
  const bound = retryMaxMs + 5_000;
  const exit = await Promise.race([run.exited.then((e) => e.code), sleep(bound + 20_000).then(() => 'still running')]);
  const afterPause = Date.now() - paused;
  const stderr = run.stderr();
  expect({ exit, afterPause: afterPause <= bound ? `within ${bound} ms` : `${afterPause} ms` }, stderr.slice(-1500)).toEqual({
    exit: 75,
    afterPause: `within ${bound} ms`,
  });
  expect(stderr).toMatch(
    /^dq-kafka: retry-budget-exhausted: in-\w+\[\d+\] offsets 0-4 stayed unavailable for 15 s \(--retry-max-ms 15000\); its offsets stay uncommitted and are re-read on restart/m,
  );
  expect(stderr).not.toMatch(/\n\s+at /);
  expect([...(await committedOffsets(kafka.brokers, names.group, names.input)).values()].every((o) => o < 0n)).toBe(true);
}, 120_000);
