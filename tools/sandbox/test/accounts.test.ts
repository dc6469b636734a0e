import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateDirtyInputs, loadConfigFile, parseConfig, startSandbox, type Sandbox, type SandboxLogEvent } from '../src/index.js';
import { call } from './support/http.js';

const KEY = 'quota-key-000001';
const address = generateDirtyInputs(50, { seed: 5 }).find((c) => c.intendedClass === 'A')?.input;
let dir: string;
let sb: Sandbox | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-sandbox-accounts-'));
});
afterEach(async () => {
  await sb?.close();
  sb = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('accounts config', () => {
  it('names the field of every mistake in a config object', () => {
    const attempt = () => parseConfig({ accounts: [{ id: 'x', apiKeys: ['short'], services: ['address', 'fax'], plan: { quota: -1 } }] });
    expect(attempt).toThrow(/accounts\.0\.apiKeys\.0/);
    expect(attempt).toThrow(/accounts\.0\.services\.1/);
    expect(attempt).toThrow(/accounts\.0\.plan\.quota/);
    try {
      attempt();
    } catch (err) {
      expect((err as { code?: string }).code).toBe('config-invalid');
    }
  });

  it('refuses a third API key, a key shared by two accounts and unknown fields', () => {
    expect(() => parseConfig({ accounts: [{ id: 'a', apiKeys: ['k1-aaaaaaa', 'k2-aaaaaaa', 'k3-aaaaaaa'] }] })).toThrow(/accounts\.0\.apiKeys/);
    expect(() =>
      parseConfig({
        accounts: [
          { id: 'a', apiKeys: ['same-key-1'] },
          { id: 'b', apiKeys: ['same-key-1'] },
        ],
      }),
    ).toThrow(/accounts\.1\.apiKeys\.0: API key already used by account "a"/);
    expect(() => parseConfig({ accounts: [{ id: 'a', apiKeys: ['k1-aaaaaaa'], quota: 5 }] })).toThrow(/quota/);
  });

  it('a bad config file is reported with its path and the field; broken JSON too', async () => {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ accounts: [{ id: 'a', apiKeys: ['k1-aaaaaaa'], sessionLifetimeSeconds: 0 }] }));
    await expect(loadConfigFile(bad)).rejects.toThrow(new RegExp(`${bad}[\\s\\S]*accounts\\.0\\.sessionLifetimeSeconds`));
    const broken = join(dir, 'broken.json');
    await writeFile(broken, '{"accounts": [');
    await expect(loadConfigFile(broken)).rejects.toMatchObject({ code: 'config-invalid' });
    await expect(loadConfigFile(join(dir, 'missing.json'))).rejects.toMatchObject({ code: 'config-unreadable' });
  });

  it('fills defaults: every service and feature, no quota limit, 180 s sessions', () => {
    const cfg = parseConfig({ accounts: [{ id: 'a', apiKeys: ['k1-aaaaaaa'] }] });
    expect(cfg.accounts[0]).toMatchObject({
      enabled: true,
      services: ['address', 'autocomplete', 'company', 'phone', 'download'],
      plan: { quota: null, validUntil: null },
      origins: null,
      sessionLifetimeSeconds: 180,
    });
  });
});

describe('prepaid plan usage', () => {
  it('records the 75 % warning once in the outbox and the log, and never the API key', async () => {
    const events: SandboxLogEvent[] = [];
    const cfgPath = join(dir, 'accounts.json');
    await writeFile(cfgPath, JSON.stringify({ outbox: 'outbox.ndjson', accounts: [{ id: 'shop', apiKeys: [KEY], plan: { quota: 8 } }] }));
    sb = await startSandbox({ config: cfgPath, log: (e) => events.push(e) });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 403, 403]);
    await sb.close();
    const lines = (await readFile(join(dir, 'outbox.ndjson'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ type: 'quota-warning', account: 'shop', used: 6, quota: 8 });
    expect(events.filter((e) => e.event === 'quota-warning')).toEqual([{ event: 'quota-warning', account: 'shop', used: 6, quota: 8 }]);
    expect(JSON.stringify(events) + lines.join('')).not.toContain(KEY);
  });

  it('counts only successful billable calls: 400s, 401s and start-session are free', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'shop', apiKeys: [KEY], plan: { quota: 3 } }] } });
    await call(sb.url, '/location/v1/validate', { json: { country: 'DE' }, bearer: KEY });
    await call(sb.url, '/location/v1/start-session', { json: { country: 'DE' }, bearer: KEY });
    await call(sb.url, '/location/v1/validate', { json: address, bearer: 'unknown-key-123' });
    expect(sb.stats().billable).toEqual({});
    for (let i = 0; i < 3; i++) expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(200);
    expect(sb.stats().billable).toEqual({ shop: 3 });
    const refused = await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY });
    expect(refused.body['type']).toMatch(/#quota-exhausted$/);
    // start-session is not billable, so an exhausted plan still opens sessions.
    expect((await call(sb.url, '/location/v1/start-session', { json: { country: 'DE' }, bearer: KEY })).status).toBe(200);
  });

  it('concurrent calls never exceed the quota', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'shop', apiKeys: [KEY], plan: { quota: 10 }, rateLimits: { validate: 0 } }] } });
    const replies = await Promise.all(Array.from({ length: 25 }, () => call(sb!.url, '/location/v1/validate', { json: address, bearer: KEY })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
    expect(sb.stats().billable).toEqual({ shop: 10 });
  });

  it('the admin reset gives the plan its quota back', async () => {
    sb = await startSandbox({ config: { accounts: [{ id: 'shop', apiKeys: [KEY], plan: { quota: 1 } }] } });
    expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(200);
    expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(403);
    expect((await call(sb.url, '/__admin/reset', { method: 'POST' })).status).toBe(204);
    expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(200);
  });
});
