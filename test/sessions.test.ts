import { setTimeout as sleep } from 'node:timers/promises';
import { AddressClient, isRunStop } from '@dq/core';
import type { Transport } from '@dq/core';
import type { Sandbox } from '@dq/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { answered, knownAddresses, requestsTo, sandboxWith, transportOn } from '@dq/test-support/platform';

// Contract 3 and 5, docs/platform-contract.md: one token per country, used verbatim, renewed before it runs out and
// once on 403 Expired Session Token. The sandbox's lifetime is shortened so expiry happens in-test.
const [home] = knownAddresses(1);
if (home === undefined) throw new Error('no known address');
const query = { country: 'DE', query: home.street.slice(0, 6) };

let sandbox: Sandbox | undefined;
let transport: Transport | undefined;
afterEach(async () => {
  await transport?.close();
  await sandbox?.close();
  transport = undefined;
  sandbox = undefined;
});

describe('session tokens against the sandbox', () => {
  it('keeps autocomplete working across several token lifetimes, one start-session per renewal and no 403', async () => {
    sandbox = await sandboxWith({ sessionLifetimeSeconds: 1.2 });
    transport = transportOn(sandbox, { sessionLifetimeMs: 1200, sessionRenewBeforeMs: 400 });
    const client = new AddressClient(transport);
    const started = Date.now();
    let answers = 0;
    let lastBatchAt = started;
    while (Date.now() - started < 3000) {
      lastBatchAt = Date.now();
      // Five callers at once: a renewal due now must still be a single start-session.
      const batch = await Promise.all(Array.from({ length: 5 }, () => client.autocomplete(query)));
      for (const res of batch) expect(res.data.results.length).toBeGreaterThan(0);
      answers += batch.length;
      await sleep(150);
    }
    const elapsed = Date.now() - started;
    const starts = requestsTo(sandbox, 'start-session');
    expect(answered(sandbox, 'autocomplete', '200')).toBe(answers);
    expect(answered(sandbox, 'autocomplete', '403')).toBe(0);
    expect(starts).toBe(transport.sessions.starts);
    // A token is renewed when it is 0.8 s old (1.2 s lifetime, 0.4 s ahead), and only when a call
    // needs one: never more than elapsed / 0.8 s renewals + the first start, however fast the loop.
    expect(starts).toBeLessThanOrEqual(Math.floor(elapsed / 800) + 1);
    // And never fewer than the calls needed: none was refused as expired, so the tokens (1.2 s each)
    // covered every call from the start to the last batch, however long a loaded machine stalled.
    expect(starts).toBeGreaterThanOrEqual(Math.ceil((lastBatchAt - started) / 1200));
  });

  it('answers a 403 expired-session-token with exactly one new session and one repeat', async () => {
    sandbox = await sandboxWith({ sessionLifetimeSeconds: 0.5 });
    // The client believes the default 3 minutes, so only the platform's 403 tells it the token expired.
    transport = transportOn(sandbox);
    const client = new AddressClient(transport);
    const first = await client.autocomplete(query);
    expect(first.attempts).toBe(1);
    await sleep(700);
    const again = await client.autocomplete(query);
    expect(again.attempts).toBe(2);
    expect(again.data.results.length).toBeGreaterThan(0);
    expect(requestsTo(sandbox, 'start-session')).toBe(2);
    expect(answered(sandbox, 'autocomplete', '403')).toBe(1);
    expect(answered(sandbox, 'autocomplete', '200')).toBe(2);
  });

  it('shares one new session among concurrent callers that all met the expired token', async () => {
    sandbox = await sandboxWith({ sessionLifetimeSeconds: 0.5 });
    transport = transportOn(sandbox);
    const client = new AddressClient(transport);
    await client.autocomplete(query);
    await sleep(700);
    const results = await Promise.all(Array.from({ length: 6 }, () => client.autocomplete(query)));
    for (const res of results) expect(res.attempts).toBe(2);
    expect(requestsTo(sandbox, 'start-session')).toBe(2);
    expect(answered(sandbox, 'autocomplete', '403')).toBe(6);
    expect(answered(sandbox, 'autocomplete', '200')).toBe(7);
  });

  it('validates with a session token instead of the API key, renewing it on expiry', async () => {
    sandbox = await sandboxWith({ sessionLifetimeSeconds: 0.5 });
    transport = transportOn(sandbox);
    const client = new AddressClient(transport);
    const first = await client.validate(home, { auth: 'session' });
    expect(first.data.resultClass).toBe('A');
    await sleep(700);
    const second = await client.validate(home, { auth: 'session' });
    expect(second.data.resultClass).toBe('A');
    expect(second.attempts).toBe(2);
    expect(requestsTo(sandbox, 'start-session')).toBe(2);
    expect(answered(sandbox, 'validate', '403')).toBe(1);
  });

  it('sends the configured Origin: a whitelisted one works, any other is refused with origin-invalid, a run stop', async () => {
    sandbox = await sandboxWith({ origins: ['shop.example.com'] });
    transport = transportOn(sandbox, { origin: 'https://shop.example.com' });
    const allowed = await new AddressClient(transport).autocomplete(query);
    expect(allowed.data.results.length).toBeGreaterThan(0);
    const stranger = transportOn(sandbox, { origin: 'https://elsewhere.example.net' });
    try {
      const error = await new AddressClient(stranger).autocomplete(query).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'origin-invalid', status: 401 });
      expect(isRunStop(error)).toBe(true);
    } finally {
      await stranger.close();
    }
  });
});
