import { describe, expect, it } from 'vitest';
import { RetriesExhaustedError } from '../src/errors/index.js';
import type { EndpointId, Throttle } from '../src/throttle/index.js';
import { createTransport } from '../src/transport/index.js';
import type { Transport, TransportOptions } from '../src/transport/index.js';
import { CLASS_A, problem, sequence, startServer, useServerAndTransport } from './transport-test-server.js';
import type { Handler } from './transport-test-server.js';

// The rate budget hears of the end of every attempt the transport makes, once, the moment it ends,
// whatever ended it: an answer, a reset, a refused connection, a timeout, an abort by the caller.
// A budget that never hears of an end holds that request's share of the limit (the Postgres
// budget's lane) until a fallback gives it up.

const live = useServerAndTransport();

interface Event {
  kind: 'acquire' | 'ended';
  ticket: number;
  at: number;
}

/** A throttle of our own interface that hands out tickets 0, 1, 2… and records when each was taken and ended. */
function ticketingThrottle(): Throttle & { events: Event[] } {
  const events: Event[] = [];
  let next = 0;
  return {
    events,
    acquire: async (_endpoint: EndpointId) => {
      const ticket = next++;
      events.push({ kind: 'acquire', ticket, at: performance.now() });
      return ticket;
    },
    ended: (_endpoint, ticket) => void events.push({ kind: 'ended', ticket: ticket as number, at: performance.now() }),
    backoff: () => undefined,
  };
}

const validate = (t: Transport, signal?: AbortSignal) =>
  t.request({ endpoint: 'validate', method: 'POST', path: '/location/v1/validate', body: { localityLine: 'Berlin' }, ...(signal ? { signal } : {}) });

/** Each ticket ended exactly once, before the next attempt took its ticket; returns how long each attempt held its ticket (ms). */
function expectEachEndedOnce(events: Event[], attempts: number): number[] {
  expect(events.map((e) => `${e.kind} ${e.ticket}`)).toEqual(Array.from({ length: attempts }, (_, i) => [`acquire ${i}`, `ended ${i}`]).flat());
  return Array.from({ length: attempts }, (_, i) => (events[2 * i + 1] as Event).at - (events[2 * i] as Event).at);
}

async function setup(handler: Handler, options: Partial<TransportOptions> = {}): Promise<Transport> {
  live.server = await startServer(handler);
  live.transport = createTransport({ baseUrl: live.server.url, apiKey: 'key-budget-test', retry: { baseDelayMs: 20, maxDelayMs: 40 }, ...options });
  return live.transport;
}

describe('the transport tells the rate budget of every attempt’s end, once', () => {
  it('answers of any status, retried: 503, 429, then 200', async () => {
    const throttle = ticketingThrottle();
    const t = await setup(sequence({ status: 503 }, problem(429, 'too-many-requests', {}, { 'retry-after': '0' }), { body: CLASS_A }), { throttle });
    expect((await validate(t)).data).toEqual(CLASS_A);
    expectEachEndedOnce(throttle.events, 3);
  });

  it('connections reset by the server, then an answer', async () => {
    const throttle = ticketingThrottle();
    const t = await setup(sequence({ destroy: true }, { destroy: true }, { body: CLASS_A }), { throttle });
    expect((await validate(t)).data).toEqual(CLASS_A);
    expectEachEndedOnce(throttle.events, 3);
  });

  it('a refused connection (nothing listens), every attempt of the retries', async () => {
    live.server = await startServer(sequence({ body: CLASS_A }));
    const url = live.server.url;
    await live.server.close();
    live.server = undefined;
    const throttle = ticketingThrottle();
    live.transport = createTransport({ baseUrl: url, apiKey: 'key-budget-test', throttle, retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 40 } });
    await expect(validate(live.transport)).rejects.toBeInstanceOf(RetriesExhaustedError);
    expectEachEndedOnce(throttle.events, 3);
  });

  it('a timeout ends its attempt when the time is up, not when the late answer would have come', async () => {
    const throttle = ticketingThrottle();
    const t = await setup(sequence({ delayMs: 3000, body: CLASS_A }, { body: CLASS_A }), { throttle, timeoutMs: 200 });
    expect((await validate(t)).data).toEqual(CLASS_A);
    const [timedOut] = expectEachEndedOnce(throttle.events, 2);
    expect(timedOut).toBeGreaterThanOrEqual(195);
    expect(timedOut).toBeLessThan(2500);
  });

  it('an abort by the caller ends the attempt at once', async () => {
    const throttle = ticketingThrottle();
    const t = await setup(sequence({ delayMs: 5000, body: CLASS_A }), { throttle });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stopped by the test')), 150);
    await expect(validate(t, controller.signal)).rejects.toBeDefined();
    const [aborted] = expectEachEndedOnce(throttle.events, 1);
    expect(aborted).toBeLessThan(4000);
  });
});
