import { createEngine } from '@dq/core';
import type { Engine } from '@dq/core';
import type { Sandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '@dq/test-support/use';
import { TEST_KEY, answered, captureLogger, knownAddresses, requestsTo, sandboxWith } from '@dq/test-support/platform';

// docs/platform-contract.md, sections 8 and 7.1: 429 per account and endpoint with Retry-After. The engine must finish a run
// when configured above the platform's limit, and cause no 429 at all when configured at it.
const LIMIT = 5;
const records = knownAddresses(24);

let sandbox: Sandbox | undefined;
let engine: Engine | undefined;
closeAfterEach(
  () => [engine, sandbox],
  () => (engine = sandbox = undefined),
);

function engineAt(sb: Sandbox, batchRate: number): Engine {
  return createEngine({
    mode: 'address',
    baseUrl: sb.url,
    apiKey: TEST_KEY,
    threads: 2,
    concurrency: 8,
    rateLimits: { batch: batchRate },
    logger: captureLogger('info').logger,
  });
}

describe('429 Too Many Requests from the sandbox', () => {
  it('completes a run configured ten times above the limit: every record answered, the 429s retried and counted', async () => {
    sandbox = await sandboxWith({ rateLimits: { batch: LIMIT } });
    engine = engineAt(sandbox, 50);
    const results = await engine.process(records);
    expect(results).toHaveLength(records.length);
    expect(results.map((r) => r.status)).toEqual(records.map(() => 'accepted'));
    const throttled = answered(sandbox, 'batch', '429');
    expect(throttled).toBeGreaterThan(0);
    expect(answered(sandbox, 'batch', '200')).toBe(records.length);
    const report = engine.report();
    expect(report.apiCalls).toBe(records.length);
    expect(report.retries).toBe(throttled);
  });

  it('causes zero 429s when the engine is configured at the sandbox limit', async () => {
    sandbox = await sandboxWith({ rateLimits: { batch: LIMIT } });
    engine = engineAt(sandbox, LIMIT);
    const started = Date.now();
    const results = await engine.process(records.slice(0, 15));
    expect(results.every((r) => r.status === 'accepted')).toBe(true);
    expect(answered(sandbox, 'batch', '429')).toBe(0);
    expect(requestsTo(sandbox, 'batch')).toBe(15);
    expect(engine.report().retries).toBe(0);
    // 15 calls paced at 5/s take about 3 s (the first goes at once); a client that waited out a
    // whole second after each call would need 15 s. Generous bound: workers may still be starting.
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
