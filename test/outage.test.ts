import { DqError, ExitCode, createEngine, exitCodeForError, isRunStop } from '@dq/core';
import type { Engine, EngineConfig } from '@dq/core';
import type { Sandbox } from '@dq/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_KEY, captureLogger, knownAddresses, requestsTo, sandboxWith } from '@dq/test-support/platform';

// When the platform cannot be reached, the engine stops the running batches with a retriable run
// stop (exit 75) instead of turning their records into final `unavailable` results; a record whose
// own call fails while the platform answers the others stays `unavailable`.
const records = knownAddresses(120);

let sandbox: Sandbox | undefined;
let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  await sandbox?.close().catch(() => undefined);
  engine = undefined;
  sandbox = undefined;
});

function engineOn(url: string, config: Partial<EngineConfig> = {}): Engine {
  engine = createEngine({
    mode: 'address',
    baseUrl: url,
    apiKey: TEST_KEY,
    threads: 0,
    concurrency: 4,
    rateLimits: { batch: 0 },
    retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    logger: captureLogger('info').logger,
    ...config,
  });
  return engine;
}

async function rejection(run: Promise<unknown>): Promise<DqError> {
  const outcome = await run.then(
    (results) => ({ results }),
    (e: unknown) => ({ error: e }),
  );
  expect(outcome).toHaveProperty('error');
  const error = (outcome as { error: unknown }).error;
  expect(error).toBeInstanceOf(DqError);
  return error as DqError;
}

function expectUnreachable(e: DqError): void {
  expect({ code: e.code, runStop: isRunStop(e), retriable: e.retriable, exit: exitCodeForError(e) }).toEqual({
    code: 'platform-unreachable',
    runStop: true,
    retriable: true,
    exit: ExitCode.TEMPFAIL,
  });
  expect(e.message).toMatch(/could not be reached since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  expect(e.message).not.toContain(TEST_KEY);
}

describe('engine: the platform unreachable', () => {
  it.each([0, 1])(
    'stops with platform-unreachable (exit 75) when every call of a window gets a 5xx, marks no record unavailable, and answers them all once the platform is back (threads: %i)',
    async (threads) => {
      sandbox = await sandboxWith({ rateLimits: { batch: null } }, { faults: { batch: { errorRate: 1, errorStatuses: [500, 503] } } });
      const e = engineOn(sandbox.url, { threads });
      expectUnreachable(await rejection(e.process(records)));
      expect(e.report().byStatus.unavailable).toBe(0);
      expect(e.report().failures).toEqual([]);
      // It stopped before trying every record (3 attempts each).
      expect(requestsTo(sandbox, 'batch')).toBeLessThan(3 * records.length);

      // Not a permanent stop: once the platform answers again, the same engine answers every record.
      sandbox.setFaults({});
      const results = await e.process(records);
      expect(results.map((r) => r.status)).toEqual(records.map(() => 'accepted'));
    },
  );

  it('stops with platform-unreachable when the platform goes away mid-batch (connections refused), and keeps the answers it had', async () => {
    sandbox = await sandboxWith({ rateLimits: { batch: null } }, { faults: { batch: { latencyMs: 20 } } });
    const e = engineOn(sandbox.url);
    const run = e.process(records);
    const sb = sandbox;
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (requestsTo(sb, 'batch') >= 30) {
          clearInterval(poll);
          resolve();
        }
      }, 5);
    });
    const answeredBefore = requestsTo(sb, 'batch');
    await sb.close();
    expectUnreachable(await rejection(run));
    expect(e.report().byStatus.unavailable).toBe(0);

    // Asked again while the platform is still away, it stops again rather than finalising anything.
    expectUnreachable(await rejection(e.process(records.slice(-5))));
    expect(e.report().byStatus.unavailable).toBe(0);
    expect(answeredBefore).toBeGreaterThanOrEqual(30);
    // The calls answered before the outage are not asked again.
    const early = await e.process(records.slice(0, 5));
    expect(early.map((r) => [r.status, r.source])).toEqual(records.slice(0, 5).map(() => ['accepted', 'cache']));
  });

  it('marks only the records whose own calls failed unavailable while the platform answers the others, and finishes the batch', async () => {
    // One call in five is answered 503 and not retried: isolated failures among answers.
    sandbox = await sandboxWith({ rateLimits: { batch: null } }, { faults: { batch: { errorRate: 0.2, errorStatuses: [503] } } }, 7);
    const e = engineOn(sandbox.url, { retry: { maxAttempts: 1 } });
    const results = await e.process(records);
    const unavailable = results.filter((r) => r.status === 'unavailable');
    expect(unavailable.length).toBeGreaterThan(5);
    expect(unavailable.length).toBe(sandbox.stats().faults['batch']?.errors);
    for (const r of unavailable) expect(r.error?.requestId).toMatch(/\S{8,}/);
    expect(results.filter((r) => r.status === 'accepted')).toHaveLength(records.length - unavailable.length);
    expect(e.report().byStatus.unavailable).toBe(unavailable.length);
  });
});
