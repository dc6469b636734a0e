import { describe, expect, test } from 'vitest';
import { AddressClient } from '../src/clients/index.js';
import { PlatformError } from '../src/errors/index.js';
import { SessionManager, createTransport } from '../src/transport/index.js';
import type { TransportOptions } from '../src/transport/index.js';
import { problem, startServer, useServerAndTransport } from './transport-test-server.js';
import type { Reply, SeenRequest, TestServer } from './transport-test-server.js';

const live = useServerAndTransport();

const API_KEY = 'key-session-test';

/**
 * A platform with sessions: start-session issues `tok/<country>/<n> +=` (characters that must pass
 * verbatim); autocomplete accepts only the newest token of its country, and answers 403 Expired
 * Session Token for tokens listed in `expired`.
 */
async function sessionPlatform(options: Partial<TransportOptions> = {}, { autocompleteDelayMs = 0, expireEveryToken = false } = {}) {
  const issued: string[] = [];
  const expired = new Set<string>();
  let n = 0;
  live.server = await startServer((req: SeenRequest): Reply => {
    const auth = String(req.headers.authorization ?? '');
    const body = req.body as { country?: string };
    if (req.path === '/location/v1/start-session') {
      if (auth !== `Bearer ${API_KEY}`) return problem(401, 'api-key-invalid');
      const token = `tok/${body.country}/${++n} +=`;
      issued.push(token);
      return { body: { _sessionToken: token } };
    }
    const token = auth.slice('Bearer '.length);
    if (expireEveryToken || expired.has(token)) return problem(403, 'expired-session-token');
    if (!issued.includes(token) || !token.startsWith(`tok/${body.country}/`)) return problem(401, 'invalid-session-token');
    return { delayMs: autocompleteDelayMs, body: { results: [{ country: body.country, locality: 'Berlin' }] } };
  });
  live.transport = createTransport({ baseUrl: live.server.url, apiKey: API_KEY, ...options });
  return { client: new AddressClient(live.transport), issued, expired, server: live.server };
}

const autocompleteTokens = (s: TestServer) => s.requests.filter((r) => r.path === '/location/v1/autocomplete').map((r) => String(r.headers.authorization));

describe('sessions', () => {
  test('autocomplete starts one session per country and reuses its token verbatim', async () => {
    const { client, issued, server: s } = await sessionPlatform();
    await client.autocomplete({ country: 'DE', query: 'Unter den' });
    await client.autocomplete({ country: 'DE', query: 'Linden' });
    await client.autocomplete({ country: 'AT', query: 'Wien' });
    expect(s.count('/location/v1/start-session')).toBe(2);
    expect(s.requests[0]!.body).toEqual({ country: 'DE' });
    expect(autocompleteTokens(s)).toEqual([`Bearer ${issued[0]}`, `Bearer ${issued[0]}`, `Bearer ${issued[1]}`]);
  });

  test('a 403 Expired Session Token causes exactly one new start-session and one repeat', async () => {
    const { client, issued, expired, server: s } = await sessionPlatform();
    await client.autocomplete({ country: 'DE', query: 'a' });
    expired.add(issued[0]!);
    const res = await client.autocomplete({ country: 'DE', query: 'b' });
    expect(res.data.results).toHaveLength(1);
    expect(res.attempts).toBe(2);
    expect(s.count('/location/v1/start-session')).toBe(2);
    expect(autocompleteTokens(s)).toEqual([`Bearer ${issued[0]}`, `Bearer ${issued[0]}`, `Bearer ${issued[1]}`]);
  });

  test('a repeat refused as expired again fails without a third session', async () => {
    const { client, server: s } = await sessionPlatform({}, { expireEveryToken: true });
    const e = await client.autocomplete({ country: 'DE', query: 'a' }).catch((x: unknown) => x);
    expect((e as PlatformError).code).toBe('expired-session-token');
    expect(s.count('/location/v1/start-session')).toBe(2);
    expect(s.count('/location/v1/autocomplete')).toBe(2);
  });

  test('concurrent callers of one country share a single start-session', async () => {
    const { client, server: s } = await sessionPlatform();
    await Promise.all(Array.from({ length: 20 }, (_, i) => client.autocomplete({ country: 'DE', query: `q${i}` })));
    expect(s.count('/location/v1/start-session')).toBe(1);
    expect(new Set(autocompleteTokens(s)).size).toBe(1);
  });

  test('concurrent callers hit by one expiry share one renewal', async () => {
    const { client, issued, expired, server: s } = await sessionPlatform({}, { autocompleteDelayMs: 50 });
    await client.autocomplete({ country: 'DE', query: 'warm' });
    expired.add(issued[0]!);
    await Promise.all(Array.from({ length: 10 }, (_, i) => client.autocomplete({ country: 'DE', query: `q${i}` })));
    expect(s.count('/location/v1/start-session')).toBe(2);
  });

  test('a token is renewed before its lifetime runs out', async () => {
    const { client, issued, server: s } = await sessionPlatform({ sessionLifetimeMs: 400, sessionRenewBeforeMs: 200 });
    await client.autocomplete({ country: 'DE', query: 'a' });
    await client.autocomplete({ country: 'DE', query: 'b' });
    await new Promise((r) => setTimeout(r, 250));
    await client.autocomplete({ country: 'DE', query: 'c' });
    expect(s.count('/location/v1/start-session')).toBe(2);
    expect(autocompleteTokens(s).at(-1)).toBe(`Bearer ${issued[1]}`);
  });

  test('validate can use the session token of its country instead of the API key', async () => {
    live.server = await startServer((req) =>
      req.path.endsWith('start-session') ? { body: { _sessionToken: 'validate-token-1' } } : { body: { resultClass: 'A', results: [] } },
    );
    live.transport = createTransport({ baseUrl: live.server.url, apiKey: API_KEY });
    await new AddressClient(live.transport).validate({ localityLine: '10117 Berlin', country: 'DE' }, { auth: 'session' });
    expect(live.server.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${API_KEY}`, 'Bearer validate-token-1']);
  });
});

describe('SessionManager', () => {
  test('renews at lifetime minus the margin, counted from when start-session was sent', async () => {
    let clock = 0;
    const starts: number[] = [];
    const manager = new SessionManager({
      lifetimeMs: 180_000,
      renewBeforeMs: 30_000,
      now: () => clock,
      start: async () => {
        starts.push(clock);
        return `t${starts.length}`;
      },
    });
    expect(await manager.token('DE')).toBe('t1');
    clock = 149_999;
    expect(await manager.token('DE')).toBe('t1');
    clock = 150_000;
    expect(await manager.token('DE')).toBe('t2');
    expect(manager.starts).toBe(2);
  });

  test('renewing a token someone already replaced returns the replacement without a new start', async () => {
    let n = 0;
    const manager = new SessionManager({ start: async () => `t${++n}` });
    await manager.token('DE');
    expect(await manager.renew('DE', 't1')).toBe('t2');
    expect(await manager.renew('DE', 't1')).toBe('t2');
    expect(manager.starts).toBe(2);
  });

  test('a failed start-session is not cached: the next caller tries again', async () => {
    let n = 0;
    const manager = new SessionManager({
      start: async () => {
        if (++n === 1) throw new Error('down');
        return 'ok';
      },
    });
    await expect(manager.token('DE')).rejects.toThrow('down');
    expect(await manager.token('DE')).toBe('ok');
  });
});
