import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { generateDirtyInputs, startSandbox, type Sandbox } from '../src/index.js';
import { isLoopback } from '../src/routes/admin.js';
import { call } from './support/http.js';

const KEY = 'dq-sandbox-key';
const address = generateDirtyInputs(50, { seed: 9 }).find((c) => c.intendedClass === 'A')?.input;
const MIXED = { validate: { errorRate: 0.3, errorStatuses: [500, 503] as (500 | 503)[], resetRate: 0.1, truncateRate: 0.1 } };
let sb: Sandbox | undefined;

afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

/** What the client saw: the status, `reset` (no response) or `truncated` (body cut short). */
async function outcome(url: string, init: RequestInit = {}): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch {
    return 'reset';
  }
  try {
    await res.arrayBuffer();
  } catch {
    return 'truncated';
  }
  return String(res.status);
}

const validateInit = (): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
  body: JSON.stringify(address),
});

async function sequence(seed: number, n: number): Promise<string[]> {
  sb = await startSandbox({ seed, config: { accounts: [{ id: 'a', apiKeys: [KEY], rateLimits: { validate: 0 } }], faults: MIXED } });
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(await outcome(`${sb.url}/location/v1/validate`, validateInit()));
  await sb.close();
  sb = undefined;
  return out;
}

describe('fault injection', () => {
  it('injects 429 with a Retry-After of its own, as problem+json on the address API and as the envelope on company', async () => {
    sb = await startSandbox({
      config: {
        accounts: [{ id: 'a', apiKeys: [KEY] }],
        faults: {
          batch: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 3600 },
          company: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 5 },
        },
      },
    });
    const batch = await fetch(`${sb.url}/location/v1/validate/batch/sync`, { ...validateInit(), body: JSON.stringify({ ...address, customerAddressId: '1' }) });
    expect(batch.status).toBe(429);
    expect(batch.headers.get('retry-after')).toBe('3600');
    expect(((await batch.json()) as { type: string }).type).toMatch(/#too-many-requests$/);
    const company = await fetch(`${sb.url}/companies/v2?searchMethod=company&name=x&country=DE`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(company.status).toBe(429);
    expect(company.headers.get('retry-after')).toBe('5');
    expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(200);
  });

  it('gives the same faults in the same order for the same seed, and other faults for another seed', async () => {
    const a = await sequence(42, 60);
    const b = await sequence(42, 60);
    const c = await sequence(43, 60);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
    for (const kind of ['200', '500', '503', 'reset', 'truncated']) expect(a).toContain(kind);
  });

  it('restarts the sequence when the faults are set again', async () => {
    sb = await startSandbox({ seed: 7, config: { accounts: [{ id: 'a', apiKeys: [KEY], rateLimits: { validate: 0 } }] } });
    const run = async () => {
      sb!.setFaults(MIXED);
      const out: string[] = [];
      for (let i = 0; i < 30; i++) out.push(await outcome(`${sb!.url}/location/v1/validate`, validateInit()));
      return out;
    };
    expect(await run()).toEqual(await run());
  });

  it('an injected error still carries X-Service-Request-Id and a problem+json body', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'a', apiKeys: [KEY] }], faults: { validate: { errorRate: 1, errorStatuses: [503] } } } });
    const r = await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY });
    expect(r.status).toBe(503);
    expect(r.headers.get('x-service-request-id')).toBeTruthy();
    expect(r.body['type']).toMatch(/\/location\/problems#service-unavailable$/);
  });

  it('delays responses by latencyMs', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'a', apiKeys: [KEY] }], faults: { validate: { latencyMs: 250 } } } });
    const t0 = performance.now();
    expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(240);
  });

  it('bills a request received whole whose client gave up during the latency: the platform did the work', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'a', apiKeys: [KEY] }], faults: { batch: { latencyMs: 400 } } } });
    const gaveUp = new AbortController();
    const sent = fetch(`${sb.url}/location/v1/validate/batch/sync`, {
      ...validateInit(),
      body: JSON.stringify({ ...address, customerAddressId: '1' }),
      signal: gaveUp.signal,
    });
    await new Promise((r) => setTimeout(r, 100));
    gaveUp.abort();
    await expect(sent).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 600));
    expect(sb.stats().billable['a']).toBe(1);
  });

  it('cuts a download short when truncateRate is 1, while Content-Length promises the whole file', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'a', apiKeys: [KEY] }], faults: { download: { truncateRate: 1 } } } });
    const url = `${sb.url}/download/v1/software/software-bundle/latest/linux/software-bundle.zip`;
    expect(await outcome(url, { headers: { authorization: `Bearer ${KEY}` } })).toBe('truncated');
    expect(sb.stats().faults['download']).toMatchObject({ truncations: 1 });
  });

  it('counts requests per endpoint and outcome, resets included', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'a', apiKeys: [KEY] }], faults: { 'start-session': { resetRate: 1 } } } });
    await outcome(`${sb.url}/location/v1/start-session`, { ...validateInit(), body: '{"country":"DE"}' });
    await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY });
    await call(sb.url, '/location/v1/validate', { json: address });
    await call(sb.url, '/nowhere');
    const stats = sb.stats();
    expect(stats.requests['start-session']).toEqual({ total: 1, byStatus: { reset: 1 } });
    expect(stats.requests['validate']).toEqual({ total: 2, byStatus: { '200': 1, '401': 1 } });
    expect(stats.requests['other']).toEqual({ total: 1, byStatus: { '404': 1 } });
    expect(stats.billable).toEqual({ a: 1 });
  });
});

describe('admin endpoints', () => {
  it('PUT /__admin/faults switches faults on and off, GET /__admin/stats reports them', async () => {
    sb = await startSandbox();
    const put = await call(sb.url, '/__admin/faults', { method: 'PUT', json: { company: { errorRate: 1, errorStatuses: [500] } } });
    expect(put.status).toBe(200);
    expect(put.body['company']).toMatchObject({ errorRate: 1, errorStatuses: [500], resetRate: 0 });
    const r = await call(sb.url, '/companies/v2', { json: { company: 'Müller' }, bearer: KEY });
    expect(r.status).toBe(500);
    expect((await call(sb.url, '/__admin/faults', { method: 'PUT', json: {} })).status).toBe(200);
    expect((await call(sb.url, '/companies/v2', { json: { company: 'Müller' }, bearer: KEY })).status).toBe(200);
    const stats = await call(sb.url, '/__admin/stats');
    expect(stats.body['requests']['company']).toEqual({ total: 2, byStatus: { '500': 1, '200': 1 } });
    expect(stats.body['faults']['company']).toMatchObject({ errors: 1 });
  });

  it('refuses a bad fault setting with violations naming the field', async () => {
    sb = await startSandbox();
    const r = await call(sb.url, '/__admin/faults', { method: 'PUT', json: { validate: { errorRate: 2 } } });
    expect(r.status).toBe(400);
    expect(r.body['violations'][0].fieldName).toBe('validate.errorRate');
    expect((await call(sb.url, '/__admin/faults', { method: 'PUT', json: { fax: {} } })).status).toBe(400);
  });

  it('answers 403 to a client that is not on the loopback interface', async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal);
    if (external === undefined) throw new Error('this test needs a non-loopback IPv4 interface to connect from');
    sb = await startSandbox({ host: '0.0.0.0' });
    const remote = `http://${external.address}:${sb.port}`;
    const r = await call(remote, '/__admin/stats');
    expect(r.status).toBe(403);
    expect((await call(remote, '/__admin/faults', { method: 'PUT', json: { validate: { errorRate: 1 } } })).status).toBe(403);
    expect(sb.stats().faults).toEqual({});
    expect((await call(`http://127.0.0.1:${sb.port}`, '/__admin/stats')).status).toBe(200);
  });

  it('recognises loopback peers in IPv4, IPv6 and IPv4-mapped form only', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'].every(isLoopback)).toBe(true);
    expect(['192.0.2.2', '::ffff:10.0.0.1', 'fd00::2', undefined].some(isLoopback)).toBe(false);
  });
});
