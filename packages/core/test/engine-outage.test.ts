import { describe, expect, it } from 'vitest';
import { DqError } from '@dq/core';
import { PLATFORM_UNREACHABLE } from '@dq/core/engine';
import type { Engine, RecordResult } from '@dq/core';
import { addresses, batchAnswer, closeAfterEach, startScriptedPlatform, testEngine } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

// An outage against a record's own failure (docs/architecture.md "Error handling"): 8 calls in a
// row that end without an answer are an outage — the run stops, no record is marked unavailable —
// also when the platform answers again right after; failures between answers are the records' own.

let platform: ScriptedPlatform | undefined;
let engine: Engine | undefined;
closeAfterEach(
  () => [engine, platform],
  () => (engine = platform = undefined),
);

/** What `process` ended with: its results, or the error it rejected with. */
async function outcome(e: Engine, n: number): Promise<RecordResult[] | DqError> {
  return e.process(addresses(n)).catch((err: unknown) => err as DqError);
}

describe('engine: a short outage', () => {
  it.each([0, 1])(
    'the platform down for its first 20 calls, then answering again within the same chunk of calls: the run stops as an outage, no record is marked unavailable (threads: %i)',
    async (threads) => {
      // Failures at once, answers a little later: the 20 failures end before every answer.
      platform = await startScriptedPlatform((req, nth) => (nth <= 20 ? { status: 503, body: 'upstream down' } : { ...batchAnswer(req, 'A'), delayMs: 20 }));
      engine = testEngine(platform.url, 'key-outage', { threads, concurrency: 32, retry: { maxAttempts: 1 } });
      const ended = await outcome(engine, 60);
      expect(ended).toBeInstanceOf(DqError);
      expect(ended).toMatchObject({ code: PLATFORM_UNREACHABLE, scope: 'run' });
      expect((ended as DqError).message).toMatch(/calls in a row failed after their retries/);
      expect(engine.report().byStatus.unavailable).toBe(0);
      // The platform did answer again, in the same chunk as the failures.
      expect(platform.seen.length).toBeGreaterThan(20);
    },
  );

  it.each([0, 1])(
    'every fourth record failing on its own while the others are answered: those records are unavailable, the run goes on (threads: %i)',
    async (threads) => {
      platform = await startScriptedPlatform((req) => {
        const n = Number(String(req.body['street']).slice('Street '.length));
        return n % 4 === 3 ? { status: 503, body: 'this record fails' } : batchAnswer(req, 'A');
      });
      engine = testEngine(platform.url, 'key-outage', { threads, concurrency: 32, retry: { maxAttempts: 1 } });
      const ended = await outcome(engine, 60);
      expect(ended).not.toBeInstanceOf(Error);
      const statuses = (ended as RecordResult[]).map((r) => r.status);
      // 15 failures in the chunk of 60, more than 8, but never 8 without an answer between them.
      expect(statuses.filter((s) => s === 'unavailable')).toHaveLength(15);
      expect(statuses.filter((s, i) => s === 'unavailable' && i % 4 !== 3)).toEqual([]);
    },
  );

  it.each([0, 1])(
    'the platform gone for the last 5 calls of a batch, with no call after them to tell: an outage, not 5 records unavailable (threads: %i)',
    async (threads) => {
      // The first 55 answered at once; the last 5 fail, later than every answer.
      platform = await startScriptedPlatform((req, nth) => (nth <= 55 ? batchAnswer(req, 'A') : { status: 503, body: 'upstream down', delayMs: 50 }));
      engine = testEngine(platform.url, 'key-outage', { threads, concurrency: 32, retry: { maxAttempts: 1 } });
      const ended = await outcome(engine, 60);
      expect(ended).toMatchObject({ code: PLATFORM_UNREACHABLE, scope: 'run' });
      expect(engine.report().byStatus.unavailable).toBe(0);
    },
  );

  it('one call failing last, after the platform answered every other: that record is unavailable, the run goes on', async () => {
    platform = await startScriptedPlatform((req, nth) => (nth <= 59 ? batchAnswer(req, 'A') : { status: 503, body: 'this record fails', delayMs: 50 }));
    engine = testEngine(platform.url, 'key-outage', { concurrency: 32, retry: { maxAttempts: 1 } });
    const ended = await outcome(engine, 60);
    expect(ended).not.toBeInstanceOf(Error);
    expect((ended as RecordResult[]).filter((r) => r.status === 'unavailable')).toHaveLength(1);
  });
});
