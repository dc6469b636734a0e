import { MessageChannel } from 'node:worker_threads';
import { describe, expect, test } from 'vitest';
import { CompanyClient } from '../src/clients/index.js';
import {
  ContractError,
  DqError,
  LocalValidationError,
  PROBLEMS,
  PlatformError,
  RetriesExhaustedError,
  TransportError,
  errorFromData,
  errorToData,
  isRunStop,
} from '../src/errors/index.js';
import type { ErrorData, ProblemFragment } from '../src/errors/index.js';
import { createTransport } from '../src/transport/index.js';
import { companyError, problem, sequence, startServer, useServerAndTransport } from './transport-test-server.js';
import type { Reply } from './transport-test-server.js';

const live = useServerAndTransport();

async function answerOnce(reply: Reply): Promise<unknown> {
  live.server = await startServer(sequence(reply));
  live.transport = createTransport({ baseUrl: live.server.url, apiKey: 'key-errors-test' });
  return live.transport.request({ endpoint: 'validate', method: 'POST', path: '/location/v1/validate', body: {}, retry: false }).then(
    () => undefined,
    (e: unknown) => e,
  );
}

const addressRows = Object.entries(PROBLEMS).filter(([code]) => !code.startsWith('company-')) as Array<[ProblemFragment, (typeof PROBLEMS)[ProblemFragment]]>;

/**
 * The address API's error rows as docs/platform-contract.md section 7.1 lists them, written out here
 * (not read from the code's table): HTTP status, and whether repeating the request can help. 4xx
 * answers repeat identically; a 429 is waited out and a 500 Internal Error retried with backoff;
 * Country not available is a permanent answer about the record; an expired session token is
 * repeated only through a new session, never as is.
 */
const CONTRACT_ROWS: Record<string, { status: number; retriable: boolean }> = {
  'field-error': { status: 400, retriable: false },
  'no-auth-data': { status: 401, retriable: false },
  'api-key-invalid': { status: 401, retriable: false },
  'origin-invalid': { status: 401, retriable: false },
  'missing-session-token': { status: 401, retriable: false },
  'invalid-session-token': { status: 401, retriable: false },
  'account-disabled': { status: 403, retriable: false },
  'service-disabled': { status: 403, retriable: false },
  'feature-disabled': { status: 403, retriable: false },
  'quota-expired': { status: 403, retriable: false },
  'quota-exhausted': { status: 403, retriable: false },
  'expired-session-token': { status: 403, retriable: false },
  'not-found': { status: 404, retriable: false },
  'method-not-allowed': { status: 405, retriable: false },
  'unsupported-media-type': { status: 415, retriable: false },
  'too-many-requests': { status: 429, retriable: true },
  'internal-error': { status: 500, retriable: true },
  'country-not-available': { status: 500, retriable: false },
};

describe('address API problems (contract 7.1)', () => {
  test("the code knows exactly the contract's rows", () => {
    expect(addressRows.map(([code]) => code).sort()).toEqual(Object.keys(CONTRACT_ROWS).sort());
  });

  test.each(addressRows)('a %s answer becomes a PlatformError with that code and the request id', async (fragment, row) => {
    const violations = fragment === 'field-error' ? [{ fieldName: 'country', message: 'invalid country code' }] : undefined;
    const e = await answerOnce(problem(CONTRACT_ROWS[fragment]?.status ?? 599, fragment, violations ? { violations } : {}));
    expect(e).toBeInstanceOf(PlatformError);
    const err = e as PlatformError;
    expect(err.code).toBe(fragment);
    expect(err.status).toBe(CONTRACT_ROWS[fragment]?.status);
    expect(err.requestId).toBe('req-1');
    // Retriable as the contract says, not as the code's own table says.
    expect(err.retriable).toBe(CONTRACT_ROWS[fragment]?.retriable);
    expect(err.scope).toBe(row.scope);
    expect(err.message).toContain('req-1');
    if (violations) expect(err.violations).toEqual(violations);
    expect(live.server?.requests).toHaveLength(1);
  });

  test('the run stops on key, account, service, feature and quota problems but not on record or request problems', () => {
    const stopping = addressRows
      .filter(([, row]) => row.scope === 'run')
      .map(([code]) => code)
      .sort();
    expect(stopping).toEqual(
      [
        'account-disabled',
        'api-key-invalid',
        'feature-disabled',
        'no-auth-data',
        'origin-invalid',
        'quota-exhausted',
        'quota-expired',
        'service-disabled',
      ].sort(),
    );
  });

  test('an unknown problem type on a 4xx is not retriable and keeps its type and request id', async () => {
    const e = (await answerOnce(problem(409, 'brand-new-problem'))) as PlatformError;
    expect(e.code).toBe('unknown-problem');
    expect(e.retriable).toBe(false);
    expect(e.problemType).toBe('https://docs.example.com/location/problems#brand-new-problem');
    expect(e.requestId).toBe('req-1');
  });

  test('an unknown problem type on a 5xx is retried with backoff, as contract 7.1 allows for every 5xx', async () => {
    live.server = await startServer(sequence(problem(503, 'brand-new-outage'), { body: { resultClass: 'A', results: [] } }));
    live.transport = createTransport({ baseUrl: live.server.url, apiKey: 'key-errors-test', retry: { baseDelayMs: 1, maxAttempts: 4 } });
    const e = (await live.transport.request({ endpoint: 'validate', method: 'POST', path: '/location/v1/validate', body: {} }).then(
      () => undefined,
      (x: unknown) => x,
    )) as PlatformError;
    expect(e).toBeUndefined();
    expect(live.server?.requests).toHaveLength(2);
  });

  test('an unknown problem type on a 5xx is a retriable server-error keeping its type, title and status', async () => {
    const e = (await answerOnce(problem(503, 'service-unavailable'))) as PlatformError;
    expect(e).toMatchObject({ code: 'server-error', retriable: true, scope: 'request', status: 503, requestId: 'req-1' });
    expect(e.problemType).toBe('https://docs.example.com/location/problems#service-unavailable');
    expect(e.message).toContain('HTTP 503');
  });

  test.each([
    ['an HTML page from a proxy', { status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>Bad gateway</h1>' }],
    ['an empty body', { status: 503, body: '' }],
    ['JSON of another shape', { status: 504, body: { message: 'upstream timed out' } }],
  ] as Array<[string, Reply]>)('a 5xx with %s is a retriable server-error', async (_what, reply) => {
    const e = (await answerOnce(reply)) as PlatformError;
    expect(e.code).toBe('server-error');
    expect(e.retriable).toBe(true);
    expect(e.status).toBe((reply as { status: number }).status);
  });

  test('isRunStop is true for a quota-exhausted answer and false for a field error', async () => {
    expect(isRunStop(await answerOnce(problem(403, 'quota-exhausted')))).toBe(true);
    await live.transport?.close();
    await live.server?.close();
    expect(isRunStop(await answerOnce(problem(400, 'field-error')))).toBe(false);
  });

  test('a 200 whose body breaks the schema is a contract error naming the field and the request id', async () => {
    live.server = await startServer(sequence({ body: { resultClass: 'Z', results: [] } }));
    live.transport = createTransport({ baseUrl: live.server.url });
    const { AddressResultSchema } = await import('../src/schemas/index.js');
    const e = await live.transport
      .request({ endpoint: 'validate', method: 'POST', path: '/location/v1/validate', body: {}, schema: AddressResultSchema })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ContractError);
    expect((e as ContractError).code).toBe('contract-violation');
    expect((e as ContractError).requestId).toBe('req-1');
    expect((e as ContractError).message).toContain('resultClass');
  });
});

describe('company error envelopes (contract 7.2)', () => {
  const rows: Array<[number, string, string, boolean, string]> = [
    [400, 'Bad Request', 'company-bad-request', false, 'record'],
    [401, 'Unauthorized', 'company-unauthorized', false, 'run'],
    [403, 'Forbidden', 'company-forbidden', false, 'run'],
    [500, 'Internal Server Error', 'company-server-error', true, 'request'],
  ];
  test.each(rows)('a %i envelope (%s) becomes code %s', async (status, error, code, retriable, scope) => {
    live.server = await startServer(sequence(companyError(status, error, 'the message of the service')));
    live.transport = createTransport({ baseUrl: live.server.url, apiKey: 'key-company', retry: { maxAttempts: 1 } });
    const e = await new CompanyClient(live.transport).company({ company: 'ACME GmbH' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(PlatformError);
    const err = e as PlatformError;
    expect([err.code, err.status, err.retriable, err.scope, err.requestId]).toEqual([code, status, retriable, scope, 'req-1']);
    expect(err.title).toBe('the message of the service');
  });
});

describe('errors as data across threads', () => {
  function throughPort(data: ErrorData): Promise<ErrorData> {
    const { port1, port2 } = new MessageChannel();
    return new Promise((resolve) => {
      port2.once('message', (m: ErrorData) => {
        port1.close();
        port2.close();
        resolve(m);
      });
      port1.postMessage(data);
    });
  }

  test('every error class survives postMessage with class, code, retriable, scope, status and request id', async () => {
    const platform = new PlatformError('Quota Exhausted [quota-exhausted]', {
      code: 'quota-exhausted',
      retriable: false,
      scope: 'run',
      status: 403,
      requestId: 'r-9',
      problemType: 'https://docs.example.com/location/problems#quota-exhausted',
      retryAfterMs: 1000,
    });
    const cases: Error[] = [
      platform,
      new LocalValidationError('refused', [{ fieldName: 'country', message: 'must be upper-case' }]),
      new ContractError('bad body', { status: 200, requestId: 'r-2' }),
      new TransportError('timed out', { code: 'timeout', retriable: true }),
      new RetriesExhaustedError('gave up', { attempts: 6, cause: platform, status: 403, requestId: 'r-9' }),
      new DqError('custom', { code: 'engine-thing', retriable: true, scope: 'record' }),
    ];
    for (const original of cases) {
      const rebuilt = errorFromData(await throughPort(errorToData(original)));
      expect(rebuilt.constructor).toBe(original.constructor);
      expect(rebuilt.message).toBe(original.message);
      if (original instanceof DqError) {
        const r = rebuilt as DqError;
        expect([r.code, r.retriable, r.scope, r.status, r.requestId]).toEqual([
          original.code,
          original.retriable,
          original.scope,
          original.status,
          original.requestId,
        ]);
        expect(r.violations).toEqual(original.violations);
      }
    }
    const exhausted = errorFromData(await throughPort(errorToData(cases[4]))) as RetriesExhaustedError;
    expect(exhausted.attempts).toBe(6);
    expect(exhausted.cause).toBeInstanceOf(PlatformError);
    expect((exhausted.cause as PlatformError).retryAfterMs).toBe(1000);
    expect(isRunStop(errorFromData(errorToData(platform)))).toBe(true);
  });

  test('a foreign error becomes code unexpected and is rebuilt as a plain Error', () => {
    const data = errorToData(new TypeError('x is not a function'));
    expect(data).toMatchObject({ kind: 'Error', code: 'unexpected', retriable: false });
    expect(errorFromData(data)).toBeInstanceOf(Error);
  });
});
