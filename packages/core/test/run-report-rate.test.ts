import { describe, expect, it } from 'vitest';
import { createEngine, createSilentLogger } from '@dq/core';
import type { Engine } from '@dq/core';
import { CallRateHistogram, MAX_RATE_BUCKETS } from '../src/engine/run-report.js';
import { addresses, batchAnswer, closeAfterEach, startScriptedPlatform } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

let platform: ScriptedPlatform | undefined;
let engine: Engine | undefined;

closeAfterEach(
  () => [engine, platform],
  () => (engine = platform = undefined),
);

describe('run report: calls per second', () => {
  it.each([0, 1])('counts every call in the second it was made, paced by the rate limit (threads: %i)', async (threads) => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    engine = createEngine({
      mode: 'address',
      baseUrl: platform.url,
      apiKey: 'k',
      threads,
      rateLimits: { batch: 20 },
      logger: createSilentLogger(),
    });
    await engine.process(addresses(50));
    const { apiCalls, callsPerSecond } = engine.report();
    expect(apiCalls).toBe(50);
    expect(callsPerSecond).toBeDefined();
    const { counts, bucketSeconds, startSecond } = callsPerSecond!;
    expect(bucketSeconds).toBe(1);
    expect(callsPerSecond!.limit).toBe(20);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(50);
    // 50 calls at 20/s take at least 2.5 s: three or more seconds, none above the limit plus the second's edges.
    expect(counts.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...counts)).toBeLessThanOrEqual(21);
    expect(Math.abs(startSecond * 1000 - Date.now())).toBeLessThan(60_000);
  });

  it('stays bounded for a long run: buckets widen, no call is lost', () => {
    const h = new CallRateHistogram();
    let total = 0;
    for (let s = 0; s < 100_000; s += 7) {
      h.add(1_700_000_000 + s, 3);
      total += 3;
    }
    h.add(1_699_999_990, 1); // an answer reported out of order, before the first one seen
    const { counts, bucketSeconds } = h.snapshot();
    expect(counts.length).toBeLessThanOrEqual(MAX_RATE_BUCKETS);
    expect(bucketSeconds).toBeGreaterThanOrEqual(512);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(total + 1);
  });
});
