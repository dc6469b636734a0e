import { DqError, ExitCode, createEngine, exitCodeForError, isRunStop } from '@dq/core';
import type { Engine, EngineConfig } from '@dq/core';
import type { Sandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { closeAfterEach } from '@dq/test-support/use';
import type { AccountInput } from '@dq/test-support/platform';
import { TEST_KEY, captureLogger, knownAddresses, requestsTo, sandboxWith } from '@dq/test-support/platform';

// docs/architecture.md "Error handling": a 401/403 of key, account, service, feature or quota stops the
// whole run (exit code 3) instead of failing record after record.
const records = knownAddresses(40);

let sandbox: Sandbox | undefined;
let engine: Engine | undefined;
closeAfterEach(
  () => [engine, sandbox],
  () => (engine = sandbox = undefined),
);

function engineOn(sb: Sandbox, config: Partial<EngineConfig> = {}): Engine {
  return createEngine({ mode: 'address', baseUrl: sb.url, apiKey: TEST_KEY, threads: 1, concurrency: 4, logger: captureLogger('info').logger, ...config });
}

async function expectRunStop(run: Promise<unknown>, code: string): Promise<DqError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DqError);
  const e = error as DqError;
  expect({ code: e.code, runStop: isRunStop(e), exit: exitCodeForError(e) }).toEqual({ code, runStop: true, exit: ExitCode.STOP });
  expect(e.requestId).toMatch(/^\S{8,}$/);
  return e;
}

const cases: Array<{ name: string; account: AccountInput; code: string; apiKey?: string; mode?: EngineConfig['mode'] }> = [
  { name: 'an invalid API key', account: {}, code: 'api-key-invalid', apiKey: 'not-a-known-key-42' },
  { name: 'a disabled account', account: { enabled: false }, code: 'account-disabled' },
  { name: 'a plan without the address service', account: { services: ['company', 'phone'] }, code: 'service-disabled' },
  { name: 'a plan with batch validation switched off', account: { features: ['validate', 'sessions', 'autocomplete'] }, code: 'feature-disabled' },
  { name: 'a plan whose period has passed', account: { plan: { quota: 1000, validUntil: '2020-01-31T23:59:59Z' } }, code: 'quota-expired' },
  { name: 'a plan without the company service, in company mode', account: { services: ['address'] }, code: 'company-forbidden', mode: 'company' },
  { name: 'an invalid API key, in vat mode', account: {}, code: 'company-unauthorized', apiKey: 'not-a-known-key-42', mode: 'vat' },
];

describe('run-level stops through the engine against the sandbox', () => {
  for (const c of cases) {
    it(`stops the run with ${c.code} and exit code 3 for ${c.name}`, async () => {
      sandbox = await sandboxWith(c.account);
      engine = engineOn(sandbox, { apiKey: c.apiKey ?? TEST_KEY, mode: c.mode ?? 'address' });
      const input = c.mode === 'company' ? [{ company: 'Muster GmbH' }] : c.mode === 'vat' ? [{ vatId: 'DE123456789' }] : records.slice(0, 10);
      await expectRunStop(engine.process(input), c.code);
      // Later batches are refused with the same stop, without calling the platform again.
      const seen = JSON.stringify(sandbox.stats().requests);
      await expectRunStop(engine.process(input), c.code);
      expect(JSON.stringify(sandbox.stats().requests)).toBe(seen);
    });
  }

  it('stops with quota-exhausted when the plan runs out mid-run, starting no call after the stop', async () => {
    const quota = 12;
    sandbox = await sandboxWith({ plan: { quota } });
    engine = engineOn(sandbox);
    await expectRunStop(engine.process(records), 'quota-exhausted');
    expect(sandbox.stats().billable['it']).toBe(quota);
    // Only calls already in flight when the stop arrived (at most the concurrency of 4) follow it.
    const sent = requestsTo(sandbox, 'batch');
    expect(sent).toBeGreaterThan(quota);
    expect(sent).toBeLessThanOrEqual(quota + 4);
    expect(sent).toBeLessThan(records.length);
  });
});
