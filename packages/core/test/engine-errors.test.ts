import { describe, expect, it } from 'vitest';
import { DqError, PlatformError, createEngine, createLogger, exitCodeForError, isRunStop, stopAdvice } from '@dq/core';
import type { Engine, EngineConfig } from '@dq/core';
import { addresses, batchAnswer, closeAfterEach, problem, startScriptedPlatform, testEngine } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

const API_KEY = 'secret-key-7a2e90';
let platform: ScriptedPlatform | undefined;
let engine: Engine | undefined;
let logLines: string[] = [];

closeAfterEach(
  () => [engine, platform],
  () => ((engine = platform = undefined), (logLines = [])),
);

/** Requests the platform has seen, once none has arrived for 300 ms. */
async function settledCount(p: ScriptedPlatform): Promise<number> {
  for (;;) {
    const n = p.seen.length;
    await new Promise((r) => setTimeout(r, 300));
    if (p.seen.length === n) return n;
  }
}

function start(url: string, extra: Partial<EngineConfig> = {}): Engine {
  engine = testEngine(url, API_KEY, { logger: createLogger({ level: 'debug', write: (line) => void logLines.push(line) }), ...extra });
  return engine;
}

describe('engine: failures per record', () => {
  it.each([0, 1])('marks a record unavailable after repeated 503s, naming the last request id, and does not cache it (threads: %i)', async (threads) => {
    platform = await startScriptedPlatform((req) =>
      String(req.body['street']) === 'Street 1' ? { status: 503, body: 'upstream down' } : batchAnswer(req, 'A'),
    );
    const e = start(platform.url, { threads });
    const results = await e.process(addresses(3));
    expect(results.map((r) => r.status)).toEqual(['accepted', 'unavailable', 'accepted']);
    const failedIds = platform.seen.filter((s) => s.body['street'] === 'Street 1').map((s) => s.requestId);
    expect(failedIds).toHaveLength(3);
    expect(results[1]?.error?.requestId).toBe(failedIds[2]);
    expect(results[1]?.requestId).toBe(failedIds[2]);
    const report = e.report();
    expect(report.retries).toBe(2);
    expect(report.failures).toEqual([expect.objectContaining({ requestId: failedIds[2] })]);
    expect(report.byStatus.unavailable).toBe(1);

    await e.process(addresses(3));
    expect(platform.seen.filter((s) => s.body['street'] === 'Street 1')).toHaveLength(6);
    // Every thread logs through the engine's logger: the retry lines arrive here, key-free.
    expect(logLines.some((l) => l.includes('retrying') && l.includes(`"requestId":"${failedIds[0]}"`))).toBe(true);
    expect(logLines.some((l) => l.includes('record unavailable') && l.includes(`"requestId":"${failedIds[2]}"`))).toBe(true);
    expect(logLines.join('')).not.toContain(API_KEY);
    // Relayed lines are whole JSON objects with one level, one time and the message.
    for (const l of logLines) {
      expect(l.match(/"time":/g)).toHaveLength(1);
      expect(JSON.parse(l)).toMatchObject({ level: expect.stringMatching(/^(debug|info|warn|error)$/), msg: expect.any(String) });
    }
  });

  it('marks records unsupported-country when their country is not available, with that code, without retrying', async () => {
    platform = await startScriptedPlatform((req) => (req.body['country'] === 'LI' ? problem(500, 'country-not-available') : batchAnswer(req, 'A')));
    const results = await start(platform.url).process([...addresses(1), { ...addresses(1, 5)[0], country: 'LI' }]);
    expect(results[0]?.status).toBe('accepted');
    expect(results[1]).toMatchObject({ status: 'unsupported-country', error: { code: 'country-not-available' } });
    expect(platform.seen.filter((s) => s.body['country'] === 'LI')).toHaveLength(1);
  });

  it('makes a record invalid-input with the platform violations on a 400 field error, without retrying', async () => {
    platform = await startScriptedPlatform((req) =>
      req.body['street'] === 'Street 0'
        ? problem(400, 'field-error', { violations: [{ fieldName: 'houseNumber', message: 'not a house number' }] })
        : batchAnswer(req, 'A'),
    );
    const e = start(platform.url);
    const results = await e.process(addresses(2));
    expect(results[0]).toMatchObject({
      status: 'invalid-input',
      source: 'api',
      error: { code: 'field-error', violations: [{ fieldName: 'houseNumber', message: 'not a house number' }] },
    });
    expect(results[0]?.error?.requestId).toBe('req-1');
    expect(platform.seen.filter((s) => s.body['street'] === 'Street 0')).toHaveLength(1);
    // A field error is definitive: the same input is answered from the cache next time.
    expect((await e.process(addresses(1)))[0]).toMatchObject({ status: 'invalid-input', source: 'cache' });
  });

  it('marks a record unavailable when the answer breaks the schema', async () => {
    platform = await startScriptedPlatform((req) => ({
      body: { customerAddressId: req.body['customerAddressId'], resultClass: 'Z', results: [] },
    }));
    const [result] = await start(platform.url).process(addresses(1));
    expect(result).toMatchObject({ status: 'unavailable', error: { code: 'contract-violation', requestId: 'req-1' } });
  });

  it('marks a record unavailable when batch/sync echoes another customerAddressId', async () => {
    platform = await startScriptedPlatform((req) => ({ body: { ...(batchAnswer(req, 'A').body as object), customerAddressId: 'x' } }));
    const [result] = await start(platform.url).process(addresses(1));
    expect(result).toMatchObject({ status: 'unavailable', error: { code: 'contract-violation' } });
  });
});

describe('engine: run stop', () => {
  it.each([0, 2])('rejects with the rebuilt quota error on 403 and starts no further calls (threads: %i)', async (threads) => {
    platform = await startScriptedPlatform((req, nth) => ({
      ...(nth >= 5 ? problem(403, 'quota-exhausted') : batchAnswer(req, 'A')),
      delayMs: 10,
    }));
    const e = start(platform.url, { threads, concurrency: 4 });
    const error = await e.process(addresses(400)).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toBeInstanceOf(DqError);
    expect(isRunStop(error)).toBe(true);
    expect((error as PlatformError).code).toBe('quota-exhausted');
    expect((error as PlatformError).status).toBe(403);
    expect((error as PlatformError).requestId).toMatch(/^req-\d+$/);
    expect(exitCodeForError(error)).toBe(3);
    // Calls already on their way when the 403 came back may reach the platform after the rejection
    // (later still on a loaded machine): count once nothing more arrives. At most the calls already
    // in flight (4) plus those whose throttle slot was taken got through.
    const sent = await settledCount(platform);
    expect(sent).toBeLessThan(5 + 8);

    const again = await e.process(addresses(3, 1000)).catch((err: unknown) => err);
    expect(again).toBe(error);
    expect(await settledCount(platform)).toBe(sent);
    expect(logLines.join('')).not.toContain(API_KEY);
  });

  it('stops the run on 401 api-key-invalid from the first call', async () => {
    platform = await startScriptedPlatform(() => problem(401, 'api-key-invalid'));
    const error = await start(platform.url)
      .process(addresses(50))
      .catch((err: unknown) => err);
    expect(isRunStop(error)).toBe(true);
    expect((error as DqError).code).toBe('api-key-invalid');
    expect(String((error as Error).message)).not.toContain(API_KEY);
  });

  it.each([0, 2])(
    'stops with exit 2 naming --base-url when the platform has no endpoint at the URL (404), marking no record (threads: %i)',
    async (threads) => {
      platform = await startScriptedPlatform(() => problem(404, 'not-found'));
      const base = platform.url.replace('http://', 'http://etl:db-pass-93@') + '/wrong-prefix';
      const e = start(base, { threads, concurrency: 4 });
      const error = await e.process(addresses(200)).catch((err: unknown) => err);
      expect(error).toMatchObject({ code: 'platform-url-unknown', status: 404, scope: 'run' });
      expect(exitCodeForError(error)).toBe(2);
      expect(stopAdvice(error, { resume: 'rerun' })).toMatchObject({ kind: 'platform-url', advice: 'fix that URL, then rerun' });
      const message = (error as Error).message;
      expect(message).toContain(`no endpoint under ${base.replace('db-pass-93', '***')}, the base URL (--base-url, env DQ_BASE_URL) (HTTP 404`);
      expect(message).not.toContain('db-pass-93');
      // One answer is enough: the calls in flight (4), not one per record.
      expect(await settledCount(platform)).toBeLessThan(4 + 8);
      expect(e.report().byStatus.unavailable).toBe(0);
    },
  );

  it.each([0, 1])('rejects with the abort reason and starts no further calls once the signal fires (threads: %i)', async (threads) => {
    platform = await startScriptedPlatform((req) => ({ ...batchAnswer(req, 'A'), delayMs: 30 }));
    const controller = new AbortController();
    const e = start(platform.url, { threads, concurrency: 2 });
    setTimeout(() => controller.abort(new Error('stop now')), 100);
    const error = await e.process(addresses(200), { signal: controller.signal }).catch((err: unknown) => err);
    expect((error as Error).message).toBe('stop now');
    const sent = platform.seen.length;
    expect(sent).toBeLessThan(40);
    await new Promise((r) => setTimeout(r, 100));
    expect(platform.seen.length).toBe(sent);
    // The engine is still usable: only that batch was aborted.
    const results = await e.process(addresses(2, 500));
    expect(results.map((r) => r.status)).toEqual(['accepted', 'accepted']);
  });
});

describe('engine: draining a batch (the stop that pays nothing twice)', () => {
  it.each([0, 1])(
    'lets the calls in flight finish and keeps their answers, starts no further call, then rejects with the reason (threads: %i)',
    async (threads) => {
      // Each answer takes 300 ms; the drain comes 50 ms after the first call arrived, while the
      // first calls are in flight.
      const drain = new AbortController();
      let armed = false;
      let drainedAt = 0;
      platform = await startScriptedPlatform((req) => {
        if (!armed) {
          armed = true;
          setTimeout(() => {
            drainedAt = performance.now();
            drain.abort(new Error('stop after the calls in flight'));
          }, 50);
        }
        return { ...batchAnswer(req, 'A'), delayMs: 300 };
      });
      const e = start(platform.url, { threads, concurrency: 4 });
      const error = await e.process(addresses(40), { drain: drain.signal }).catch((err: unknown) => err);
      expect((error as Error).message).toBe('stop after the calls in flight');
      // Not cut: the batch ended once the calls in flight were answered, some 250 ms after the drain.
      expect(performance.now() - drainedAt).toBeGreaterThanOrEqual(200);
      const sent = platform.seen.length;
      expect(sent).toBeGreaterThan(0);
      expect(sent).toBeLessThanOrEqual(4);
      await new Promise((r) => setTimeout(r, 400));
      expect(platform.seen.length).toBe(sent);
      // Their answers were kept: the whole batch again buys only the others.
      const again = await e.process(addresses(40));
      expect(again.filter((r) => r.source === 'cache')).toHaveLength(sent);
      expect(platform.seen).toHaveLength(40);
    },
  );

  it('resolves as usual when every record was answered before the drain', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const drain = new AbortController();
    const e = start(platform.url, { threads: 0, concurrency: 4 });
    const done = await e.process(addresses(3), { drain: drain.signal });
    drain.abort(new Error('too late'));
    expect(done.map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
    await expect(e.process(addresses(3), { drain: drain.signal })).rejects.toThrow('too late');
  });
});

describe('engine: configuration', () => {
  it('refuses a bad configuration naming each option, without echoing the API key', () => {
    const attempt = (): Engine => createEngine({ mode: 'address', baseUrl: 'ftp://x', apiKey: API_KEY, threads: -1, company: { limit: 51 } });
    expect(attempt).toThrow(DqError);
    try {
      attempt();
    } catch (e) {
      expect((e as DqError).code).toBe('config-invalid');
      expect(exitCodeForError(e)).toBe(2);
      expect((e as Error).message).toMatch(/baseUrl/);
      expect((e as Error).message).toMatch(/threads/);
      expect((e as Error).message).toMatch(/company\.limit/);
      expect((e as Error).message).not.toContain(API_KEY);
    }
  });
});
