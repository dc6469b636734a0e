import { describe, expect, test } from 'vitest';
import { DqError, PlatformError, RetriesExhaustedError, TransportError, errorFromData, errorToData, isRunStop } from '../src/errors/index.js';
import { exitCodeForError } from '../src/engine/index.js';
import type { EndpointId, Throttle } from '../src/throttle/index.js';
import { createTransport, parseRetryAfter, retry, retryDelay, DEFAULT_RETRY } from '../src/transport/index.js';
import type { Transport, TransportOptions } from '../src/transport/index.js';
import { CLASS_A, problem, sequence, startServer, useServerAndTransport } from './transport-test-server.js';
import type { Handler } from './transport-test-server.js';

const live = useServerAndTransport();

async function setup(handler: Handler, options: Partial<TransportOptions> = {}): Promise<Transport> {
  live.server = await startServer(handler);
  live.transport = createTransport({ baseUrl: live.server.url, apiKey: 'key-retry-test', retry: { baseDelayMs: 20 }, ...options });
  return live.transport;
}

const validate = (t: Transport, signal?: AbortSignal) =>
  t.request({ endpoint: 'validate', method: 'POST', path: '/location/v1/validate', body: { localityLine: 'Berlin' }, ...(signal ? { signal } : {}) });

/** A throttle of our own interface that records what the transport asked of it. */
function recordingThrottle(): Throttle & { acquired: EndpointId[]; backoffs: Array<number | undefined> } {
  const acquired: EndpointId[] = [];
  const backoffs: Array<number | undefined> = [];
  return {
    acquired,
    backoffs,
    acquire: async (endpoint) => void acquired.push(endpoint),
    backoff: (_endpoint, retryAfterMs) => void backoffs.push(retryAfterMs),
  };
}

describe('retries over HTTP', () => {
  test('a 400 is sent exactly once', async () => {
    const t = await setup(sequence(problem(400, 'field-error', { violations: [{ fieldName: 'country', message: 'bad' }] })));
    const e = await validate(t).catch((x: unknown) => x);
    expect((e as PlatformError).code).toBe('field-error');
    expect(live.server?.requests).toHaveLength(1);
  });

  test('503, 503, 200 succeeds in three calls and reports three attempts', async () => {
    const t = await setup(sequence({ status: 503 }, { status: 503 }, { body: CLASS_A }));
    const res = await validate(t);
    expect(res.data).toEqual(CLASS_A);
    expect(res.attempts).toBe(3);
    expect(res.requestId).toBe('req-3');
    expect(live.server?.requests).toHaveLength(3);
  });

  test('a 429 with Retry-After: 1 waits at least a second and slows the throttle', async () => {
    const throttle = recordingThrottle();
    const t = await setup(sequence(problem(429, 'too-many-requests', {}, { 'retry-after': '1' }), { body: CLASS_A }), { throttle });
    await validate(t);
    const [first, second] = live.server?.requests ?? [];
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(995);
    expect(throttle.backoffs).toEqual([1000]);
    expect(throttle.acquired).toEqual(['validate', 'validate']);
  });

  test('a Retry-After longer than the policy waits stops the run at once, naming the time to come back; the throttle holds back only up to the cap', async () => {
    const throttle = recordingThrottle();
    const t = await setup(sequence(problem(429, 'too-many-requests', {}, { 'retry-after': '3600' }), { body: CLASS_A }), {
      throttle,
      retry: { maxRetryAfterMs: 5_000 },
    });
    const started = performance.now();
    const e = (await validate(t).catch((x: unknown) => x)) as DqError;
    // At once: no wait at all, where any wait for the platform (Retry-After is in whole seconds,
    // the cap here 5 s) would take a second or more.
    expect(performance.now() - started).toBeLessThan(900);
    expect(isRunStop(e)).toBe(true);
    expect(e.code).toBe('retry-after-too-long');
    expect(e.requestId).toBe('req-1');
    expect(exitCodeForError(e)).toBe(75);
    const at = /come back at (\S+Z)/.exec(e.message)?.[1];
    expect(Math.abs(Date.parse(at!) - (Date.now() + 3_600_000))).toBeLessThan(10_000);
    expect(e.message).toContain('req-1');
    // Crosses a worker thread as a run stop with its code.
    const copy = errorFromData(errorToData(e)) as DqError;
    expect(isRunStop(copy)).toBe(true);
    expect(exitCodeForError(copy)).toBe(75);
    expect(live.server?.requests).toHaveLength(1);
    expect(throttle.backoffs).toEqual([5_000]);
  });

  test('a Retry-After within the policy is waited out in full', async () => {
    const t = await setup(sequence(problem(429, 'too-many-requests', {}, { 'retry-after': '2' }), { body: CLASS_A }), {
      retry: { maxRetryAfterMs: 2_000 },
    });
    const res = await validate(t);
    expect(res.attempts).toBe(2);
    const [first, second] = live.server?.requests ?? [];
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1995);
  });

  test('total retry time is bounded even with attempts to spare', async () => {
    const t = await setup(sequence({ status: 503 }), { retry: { maxAttempts: 1000, maxTotalMs: 1500, baseDelayMs: 100, maxDelayMs: 400 } });
    const started = performance.now();
    const e = await validate(t).catch((x: unknown) => x);
    const elapsed = performance.now() - started;
    expect(e).toBeInstanceOf(RetriesExhaustedError);
    expect(elapsed).toBeLessThan(1500 + 300);
    expect(live.server!.requests.length).toBeGreaterThan(2);
    expect(live.server!.requests.length).toBeLessThan(1000);
  });

  test('exhausted retries give a non-retriable error that keeps the last failure and its request id', async () => {
    const t = await setup(sequence(problem(500, 'internal-error')), { retry: { maxAttempts: 4, baseDelayMs: 5 } });
    const e = (await validate(t).catch((x: unknown) => x)) as RetriesExhaustedError;
    expect(e).toBeInstanceOf(RetriesExhaustedError);
    expect(e.retriable).toBe(false);
    expect(e.attempts).toBe(4);
    expect(e.requestId).toBe('req-4');
    expect(e.status).toBe(500);
    expect((e.cause as PlatformError).code).toBe('internal-error');
    expect(e.message).toContain('req-4');
    expect(live.server?.requests).toHaveLength(4);
  });

  test('a timed-out attempt is repeated and the next answer is used', async () => {
    const t = await setup(sequence({ delayMs: 1000, body: CLASS_A }, { body: CLASS_A }), { timeoutMs: 150 });
    const res = await validate(t);
    expect(res.attempts).toBe(2);
    expect(res.requestId).toBe('req-2');
  });

  test('a request that always times out ends as retries-exhausted with a timeout cause', async () => {
    const t = await setup(sequence({ delayMs: 400, body: CLASS_A }), { timeoutMs: 100, retry: { maxAttempts: 2, baseDelayMs: 1 } });
    const e = (await validate(t).catch((x: unknown) => x)) as RetriesExhaustedError;
    expect(e).toBeInstanceOf(RetriesExhaustedError);
    expect((e.cause as TransportError).code).toBe('timeout');
  });

  test('a connection reset is repeated on a new connection', async () => {
    const t = await setup(sequence({ destroy: true }, { body: CLASS_A }));
    const res = await validate(t);
    expect(res.attempts).toBe(2);
    expect(live.server?.requests).toHaveLength(2);
  });

  test('aborting during a backoff wait ends the request at once with code aborted', async () => {
    const t = await setup(sequence({ status: 503 }), { retry: { baseDelayMs: 10_000, maxDelayMs: 10_000, random: () => 0.99 } });
    const controller = new AbortController();
    const pending = validate(t, controller.signal).catch((x: unknown) => x);
    await new Promise((r) => setTimeout(r, 200));
    const started = performance.now();
    controller.abort();
    const e = (await pending) as TransportError;
    expect(performance.now() - started).toBeLessThan(200);
    expect(e).toBeInstanceOf(TransportError);
    expect(e.code).toBe('aborted');
    expect(e.retriable).toBe(false);
    expect(live.server?.requests).toHaveLength(1);
  });

  test('the throttle is asked before every attempt, retries included', async () => {
    const throttle = recordingThrottle();
    const t = await setup(sequence({ status: 502 }, { destroy: true }, { body: CLASS_A }), { throttle });
    await validate(t);
    expect(throttle.acquired).toHaveLength(3);
    expect(live.server?.requests).toHaveLength(3);
  });
});

describe('retry policy', () => {
  test('backoff uses full jitter under an exponential, capped ceiling', () => {
    const options = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(retryDelay({ kind: 'backoff' }, 1, { ...options, random: () => 0.999 })).toBe(99);
    expect(retryDelay({ kind: 'backoff' }, 3, { ...options, random: () => 0.5 })).toBe(200);
    expect(retryDelay({ kind: 'backoff' }, 10, { ...options, random: () => 0.999 })).toBe(999);
    expect(retryDelay({ kind: 'backoff' }, 4, { ...options, random: () => 0 })).toBe(0);
    expect(retryDelay({ kind: 'retry-after', ms: 90_000 }, 1, options)).toBe(30_000);
  });

  test('Retry-After is read as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('1')).toBe(1000);
    expect(parseRetryAfter(' 2.5 ')).toBe(2500);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });

  test('a programming error inside an attempt is never retried', async () => {
    let calls = 0;
    const e = await retry(async () => {
      calls++;
      throw new TypeError('bug');
    }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TypeError);
    expect(calls).toBe(1);
  });

  test('each attempt is given the time left in whole milliseconds (timers such as AbortSignal.timeout take integers only)', async () => {
    const given: number[] = [];
    await retry(
      async ({ remainingMs }) => {
        given.push(remainingMs);
        AbortSignal.timeout(remainingMs);
        if (given.length < 3) throw new TransportError('reset', { code: 'connection-error', retriable: true });
      },
      { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 3, maxTotalMs: 10_000 },
    );
    expect(given).toHaveLength(3);
    for (const ms of given) expect(Number.isInteger(ms)).toBe(true);
  });

  test('a bad retry option is refused with its name', () => {
    expect(() => createTransport({ baseUrl: 'http://127.0.0.1:1', retry: { maxAttempts: 0 } })).toThrow(/retry\.maxAttempts/);
  });
});
