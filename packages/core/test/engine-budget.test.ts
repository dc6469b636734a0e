import { describe, expect, it } from 'vitest';
import { exitCodeForError } from '@dq/core';
import type { Engine, EngineConfig } from '@dq/core';
import { addresses, batchAnswer, closeAfterEach, problem, startScriptedPlatform, testEngine } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

const API_KEY = 'test-key-b7c2e1';
let platform: ScriptedPlatform | undefined;
let engine: Engine | undefined;

closeAfterEach(
  () => [engine, platform],
  () => (engine = platform = undefined),
);

function start(url: string, extra: Partial<EngineConfig> = {}): Engine {
  engine = testEngine(url, API_KEY, extra);
  return engine;
}

describe('engine: the spending cap (maxCalls)', () => {
  it.each([0, 2])(
    'sends exactly maxCalls calls and stops with max-calls-reached, exit 5, letting the calls in flight finish (threads: %i)',
    async (threads) => {
      // Slow answers: many calls are in flight when the cap is reached.
      platform = await startScriptedPlatform((req) => ({ ...batchAnswer(req, 'A'), delayMs: 30 }));
      const e = start(platform.url, { threads, concurrency: 16, maxCalls: 50 });
      const error = await e.process(addresses(200)).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toMatchObject({ code: 'max-calls-reached', scope: 'run' });
      expect(exitCodeForError(error)).toBe(5);
      expect(platform.seen).toHaveLength(50);
      expect(e.report().budget).toMatchObject({ scope: 'local', billableCalls: 50, maxCalls: 50 });
      // The engine takes no further batch once the cap is reached.
      await expect(e.process(addresses(1))).rejects.toMatchObject({ code: 'max-calls-reached' });
    },
  );

  it('counts retries as billable calls: a 500 answered and repeated uses two of the cap', async () => {
    platform = await startScriptedPlatform((req, nth) => (nth === 1 ? problem(500, 'internal-error') : batchAnswer(req, 'A')));
    const e = start(platform.url, { threads: 0, concurrency: 1, maxCalls: 3 });
    await expect(e.process(addresses(3))).rejects.toMatchObject({ code: 'max-calls-reached' });
    expect(platform.seen).toHaveLength(3);
    expect(e.report().budget?.billableCalls).toBe(3);
  });

  it('counts a request as a call made when its first attempt went out and the cap refused its retry', async () => {
    platform = await startScriptedPlatform(() => problem(500, 'internal-error'));
    const e = start(platform.url, { threads: 0, concurrency: 1, maxCalls: 2, retry: { baseDelayMs: 1, maxDelayMs: 1 } });
    await expect(e.process(addresses(3))).rejects.toMatchObject({ code: 'max-calls-reached' });
    // The first address was sent twice (two 500s), its third attempt refused; the others never went out.
    expect(platform.seen).toHaveLength(2);
    expect(e.report()).toMatchObject({ apiCalls: 1, budget: { billableCalls: 2 } });
  });

  it('a platform whose connection is refused was never sent a call: apiCalls 0, none of the cap used, and the run stops for the outage, not at the cap', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const url = platform.url;
    await platform.close();
    const e = start(url, { threads: 0, concurrency: 2, maxCalls: 3, retry: { baseDelayMs: 1, maxDelayMs: 1 } });
    const error = await e.process(addresses(4)).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).not.toMatchObject({ code: 'max-calls-reached' });
    expect(e.report()).toMatchObject({ apiCalls: 0, budget: { billableCalls: 0, maxCalls: 3 } });
  });

  it('counts a request as a call made when its first attempt was answered and its retries found the connection refused', async () => {
    platform = await startScriptedPlatform(() => {
      // Answered once, on a connection not kept open, then gone: every retry finds the port closed
      // (a retry on a kept connection the server closed meanwhile may have been sent, and counts).
      setImmediate(() => void platform?.close());
      return { ...problem(500, 'internal-error'), headers: { connection: 'close' } };
    });
    const e = start(platform.url, { threads: 0, concurrency: 1, maxCalls: 10, retry: { baseDelayMs: 50, maxDelayMs: 50 } });
    await e.process(addresses(1)).catch(() => undefined);
    expect(platform.seen).toHaveLength(1);
    expect(e.report()).toMatchObject({ apiCalls: 1, budget: { billableCalls: 1 } });
  });

  it('names the account by a digest of key and base URL, never the key', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const e = start(platform.url, { threads: 0 });
    await e.process(addresses(2));
    const budget = e.report().budget;
    expect(budget).toMatchObject({ scope: 'local', billableCalls: 2, maxCalls: null });
    expect(budget?.account).toMatch(/^key-[0-9a-f]{16}$/);
    expect(JSON.stringify(e.report())).not.toContain(API_KEY);
  });
});
