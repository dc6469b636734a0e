import { AddressClient, DqError, RetriesExhaustedError, createEngine } from '@dq/core';
import { mapRecord } from '@dq/core/engine';
import { rootCause } from '@dq/core/errors';
import type { Engine, RecordResult } from '@dq/core';
import type { AddressInput } from '@dq/sandbox';
import { createAddressMatcher, generateDirtyInputs } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_KEY, captureLogger, engineOn, knownAddresses, requestsTo, sandboxWith, transportOn } from '@dq/test-support/platform';

// Reliability (docs/architecture.md "Error handling"): 5xx and connection resets are retried with
// backoff, bounded; what still fails is `unavailable`, never lost and never a wrong answer.
const inputs = generateDirtyInputs(500, { seed: 5 }).map((d) => ({ ...d.input }));
const matcher = createAddressMatcher();
const SEED = 42;

// The same run with the injected status as 500 (problem type internal-error, a row of 7.1) and as
// 503 (the sandbox's type service-unavailable, not a row of 7.1): the contract's retry rule is by
// status ("5xx may be retried"), so both must come out the same.
describe.each([{ status: 500 as const }, { status: 503 as const }])(
  'an engine run of 500 records while the sandbox answers one batch call in five with $status and resets one in twenty',
  ({ status }) => {
    let sandbox: Sandbox;
    let engine: Engine;
    let results: RecordResult[];

    beforeAll(async () => {
      const faults = { batch: { errorRate: 0.2, errorStatuses: [status], resetRate: 0.05 } };
      sandbox = await sandboxWith({ rateLimits: { batch: null } }, { faults }, SEED);
      engine = createEngine({
        mode: 'address',
        baseUrl: sandbox.url,
        apiKey: TEST_KEY,
        threads: 2,
        concurrency: 16,
        rateLimits: { batch: 0 },
        retry: { baseDelayMs: 20, maxDelayMs: 200 },
        logger: captureLogger('info').logger,
      });
      results = await engine.process(inputs);
    });
    afterAll(async () => {
      await engine.close();
      await sandbox.close();
    });

    it('completes with one result per record, each accepted, review, invalid or unavailable', () => {
      expect(results).toHaveLength(inputs.length);
      for (const r of results) expect(['accepted', 'review', 'invalid', 'unavailable']).toContain(r.status);
      expect(engine.report().records).toBe(inputs.length);
      const faults = sandbox.stats().faults['batch'];
      expect(faults?.errors).toBeGreaterThan(0);
      expect(faults?.resets).toBeGreaterThan(0);
    });

    it('gives every answered record the class the sandbox gives the same request without faults', () => {
      results.forEach((r, i) => {
        if (r.status === 'unavailable' || r.source !== 'api') return;
        // The engine sends the mapped (trimmed) fields, so that is what the answer is compared with.
        const sent = mapRecord('address', inputs[i] ?? {}) as unknown as AddressInput;
        expect({ i, resultClass: r.resultClass }).toEqual({ i, resultClass: matcher.validate(sent, new Set()).resultClass });
      });
    });

    it(`retries the injected ${status}s and resets (contract 7.1: 5xx may be retried), so at most 1 % end unavailable`, () => {
      const unavailable = results.filter((r) => r.status === 'unavailable');
      expect(engine.report().retries).toBeGreaterThan(0);
      // Six attempts each failing with p = 0.25 leave about 500 × 0.25⁶ ≈ 0.1 records unavailable.
      const codes = [...new Set(unavailable.map((r) => r.error?.code))].join(', ');
      expect(unavailable.length, `unavailable records (codes: ${codes})`).toBeLessThanOrEqual(5);
    });
  },
);

describe('bodies cut short by the sandbox', () => {
  let sandbox: Sandbox;
  const [home] = knownAddresses(1);
  beforeAll(async () => {
    sandbox = await sandboxWith({}, { faults: { batch: { truncateRate: 1 } } });
  });
  afterAll(() => sandbox.close());

  it('treats a truncated body as retriable: the call is repeated until the attempts run out', async () => {
    const transport = transportOn(sandbox, { retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 } });
    try {
      const error = await new AddressClient(transport).batchSync(home ?? { country: 'DE', localityLine: 'x' }, 'cut-1').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RetriesExhaustedError);
      expect((error as RetriesExhaustedError).attempts).toBe(3);
      expect(rootCause(error)).toMatchObject({ retriable: true });
      expect(requestsTo(sandbox, 'batch')).toBe(3);
    } finally {
      await transport.close();
    }
  });

  it('succeeds once the sandbox answers whole bodies again', async () => {
    sandbox.setFaults({ batch: { truncateRate: 0.5 } });
    const transport = transportOn(sandbox, { retry: { maxAttempts: 10, baseDelayMs: 10, maxDelayMs: 20 } });
    try {
      const client = new AddressClient(transport);
      const answers = await Promise.all(knownAddresses(10).map((a, i) => client.batchSync(a, `row-${i}`)));
      for (const [i, res] of answers.entries()) expect(res.data).toMatchObject({ customerAddressId: `row-${i}`, resultClass: 'A' });
      expect(answers.some((res) => res.attempts > 1)).toBe(true);
    } finally {
      await transport.close();
    }
  });
});

describe('a 503 whose problem type the contract does not list', () => {
  let sandbox: Sandbox;
  const [home] = knownAddresses(1);
  beforeAll(async () => {
    // The sandbox answers injected 503s with problem type #service-unavailable, which is none of the contract's problem types.
    sandbox = await sandboxWith({}, { faults: { batch: { errorRate: 1, errorStatuses: [503] } } });
  });
  afterAll(() => sandbox.close());

  it('is retried, and the failure it reports says server-error with the status, not an unknown problem', async () => {
    const engine = engineOn(sandbox, { threads: 0, retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 } });
    try {
      // Every call fails, so the engine takes the platform to be down and names the last failure.
      const err = (await engine.process([{ ...home }]).catch((e: unknown) => e)) as DqError;
      expect(err).toBeInstanceOf(DqError);
      expect(err.code).toBe('platform-unreachable');
      expect(err.message).toMatch(/server-error: Gave up after 3 attempts.*HTTP 503/);
      expect(err.message).not.toContain('unknown-problem');
      expect(requestsTo(sandbox, 'batch')).toBe(3);
      expect(engine.report().retries).toBe(2);
    } finally {
      await engine.close();
    }
  });
});
