import { setTimeout as sleep } from 'node:timers/promises';
import { AddressClient, CompanyClient, PhoneClient, createEngine } from '@dq/core';
import type { Engine } from '@dq/core';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_KEY, captureLogger, knownAddresses, sandboxWith, transportOn } from '@dq/test-support/platform';

// Common rule: API keys and session tokens never appear in a log line or an error message. The
// flows below make the code paths that log and throw run: retries after 5xx, resets, truncated
// bodies and 429s, session starts and renewals, field errors, run stops with a wrong key.
const WRONG_KEY = 'wrong-key-secret-0042';
/** Every token the sandbox issues starts so (tools/sandbox/src/sessions.ts). */
const SESSION_TOKEN = /dqs1\.[A-Za-z0-9_-]{6,}/;
const records = knownAddresses(30);
const [home] = records;
if (home === undefined) throw new Error('no known address');

const captured = captureLogger('debug');
const sandboxEvents: string[] = [];
const messages: string[] = [];
const issuedTokens: string[] = [];
let sandbox: Sandbox;

async function failure(promise: Promise<unknown>): Promise<void> {
  const e = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  for (let c: unknown = e; c instanceof Error; c = c.cause) messages.push(c.message);
}

async function engineRun(apiKey: string, expectStop: boolean): Promise<void> {
  const engine: Engine = createEngine({
    mode: 'address',
    baseUrl: sandbox.url,
    apiKey,
    threads: 2,
    rateLimits: { batch: 60 },
    retry: { baseDelayMs: 20, maxDelayMs: 200 },
    logger: captured.logger,
  });
  try {
    if (expectStop) return await failure(engine.process(records));
    const results = await engine.process(records);
    for (const r of results) if (r.error) messages.push(r.error.message);
  } finally {
    await engine.close();
  }
}

beforeAll(async () => {
  sandbox = await sandboxWith(
    { sessionLifetimeSeconds: 0.5, rateLimits: { batch: 20 } },
    { faults: { batch: { errorRate: 0.2, errorStatuses: [500, 503], resetRate: 0.05, truncateRate: 0.05 } } },
    3,
    (event) => void sandboxEvents.push(JSON.stringify(event)),
  );
  await engineRun(TEST_KEY, false);
  await engineRun(WRONG_KEY, true);

  const transport = transportOn(sandbox, { logger: captured.logger });
  try {
    const client = new AddressClient(transport);
    issuedTokens.push((await client.startSession('DE')).data._sessionToken);
    await client.autocomplete({ country: 'DE', query: home.street.slice(0, 5) });
    await sleep(700);
    await client.autocomplete({ country: 'DE', query: home.street.slice(0, 5) });
    const { country: _c, ...noCountry } = home;
    await failure(client.validate(noCountry));
    await failure(client.validate({ ...home, country: 'FR' }));
    await new PhoneClient(transport).describe();
  } finally {
    await transport.close();
  }
  const stranger = transportOn(sandbox, { apiKey: WRONG_KEY, logger: captured.logger });
  try {
    await failure(new CompanyClient(stranger).company({ company: 'Müller' }));
    await failure(new AddressClient(stranger).startSession('DE'));
  } finally {
    await stranger.close();
  }
}, 90_000);
afterAll(() => sandbox.close());

describe('no credentials in logs or error messages', () => {
  it('ran the flows that log: debug answers, retries, session starts and a run stop were captured', () => {
    const text = captured.lines.join('');
    expect(text).toContain('"msg":"http answer"');
    expect(text).toContain('"msg":"request failed; retrying"');
    expect(text).toContain('"msg":"session started"');
    expect(text).toContain('"msg":"session token expired; starting a new session"');
    expect(text).toContain('"msg":"run stopped"');
    expect(issuedTokens[0]).toMatch(SESSION_TOKEN);
    expect(messages.length).toBeGreaterThanOrEqual(5);
  });

  for (const [name, secret] of [
    ['the API key', TEST_KEY],
    ['a wrong API key', WRONG_KEY],
  ] as const) {
    it(`keeps ${name} out of every log line, error message and sandbox log event`, () => {
      for (const line of [...captured.lines, ...messages, ...sandboxEvents]) expect(line).not.toContain(secret);
    });
  }

  it('keeps every session token out of every log line, error message and sandbox log event', () => {
    for (const line of [...captured.lines, ...messages, ...sandboxEvents]) {
      expect(line).not.toMatch(SESSION_TOKEN);
      for (const token of issuedTokens) expect(line).not.toContain(token);
    }
  });
});
