import { describe, expect, test } from 'vitest';
import { DqError, ExitCode, LOCAL_CODES, PlatformError, TransportError, defineErrorCodes } from '../src/errors/index.js';
import { exitCodeFor, stopAdvice, stopKind, PLATFORM_UNREACHABLE } from '../src/engine/index.js';
import type { StopKind } from '../src/engine/index.js';
import { StoreError } from '../src/store/errors.js';
import { classifyFailure } from '../src/transport/http-failure.js';
import { comeBackLater } from '../src/transport/retry/retrier.js';

// The errors as core raises them where it can (the proxy's refusal from undici's message, the
// retrier's come-back-later); the others with the code and fields their raisers give them.
const wording = {
  where: 'POST http://127.0.0.1:1/location/v1/validate/batch/sync',
  origin: 'http://127.0.0.1:1',
  suffix: '',
  timeout: 'nothing received',
  reconnect: 'the service may be restarting',
  url: 'base URL',
};
const run = (code: string, retriable = false): DqError => new DqError(`stopped: ${code}`, { code, retriable, scope: 'run' });
const ToolError = defineErrorCodes('dq-tool', { usage: { exit: ExitCode.USAGE }, 'output-locked': { exit: ExitCode.TEMPFAIL } });

const CASES: Array<[string, unknown, StopKind, ExitCode]> = [
  ['the spending cap', run(LOCAL_CODES.maxCallsReached), 'cap', ExitCode.MAX_CALLS],
  [
    'a quota the platform refused',
    new PlatformError('Quota Exhausted', { code: 'quota-exhausted', status: 403, retriable: false, scope: 'run', requestId: 'r-1' }),
    'account',
    ExitCode.STOP,
  ],
  [
    'a key the platform refused',
    new PlatformError('API Key Invalid', { code: 'api-key-invalid', status: 401, retriable: false, scope: 'run' }),
    'account',
    ExitCode.STOP,
  ],
  ['a proxy refusing its credentials', classifyFailure(new Error('Proxy response (407) !== 200 when HTTP Tunneling'), wording), 'proxy', ExitCode.STOP],
  ['a proxy refusing by its rules', classifyFailure(new Error('Proxy response (403) !== 200 when HTTP Tunneling'), wording), 'proxy', ExitCode.STOP],
  ["the shared budget's grants", run(LOCAL_CODES.budgetPermissionDenied), 'fix-config', ExitCode.USAGE],
  ["the shared budget's server version", run(LOCAL_CODES.budgetDbVersion), 'fix-config', ExitCode.USAGE],
  ["the shared budget's database unreachable", run(LOCAL_CODES.budgetUnreachable), 'budget-db', ExitCode.TEMPFAIL],
  [
    "the result store's database unreachable",
    new StoreError('store-unreachable', 'the result store cannot be used: unreachable'),
    'store-db',
    ExitCode.TEMPFAIL,
  ],
  ['the platform unreachable', run(PLATFORM_UNREACHABLE, true), 'platform-later', ExitCode.TEMPFAIL],
  [
    'a Retry-After past the policy',
    comeBackLater(new PlatformError('busy', { code: 'too-many-requests', status: 429, retriable: true }), 600_000, 60_000, 0),
    'platform-later',
    ExitCode.TEMPFAIL,
  ],
  ['an unknown run stop that may pass', run('something-new', true), 'platform-later', ExitCode.TEMPFAIL],
  ['an unknown run stop that will not pass', run('something-else'), 'account', ExitCode.STOP],
  ['a connection failure of one request', new TransportError('reset', { code: 'connection-error', retriable: true }), 'failed', ExitCode.TEMPFAIL],
  ["a connector's own error", new ToolError('output-locked', 'out.csv is locked'), 'failed', ExitCode.TEMPFAIL],
  ['an unknown DqError', new DqError('odd', { code: 'odd', retriable: false }), 'failed', ExitCode.UNEXPECTED],
  ['a plain Error (a bug)', new TypeError('x is undefined'), 'failed', ExitCode.UNEXPECTED],
  ['a thrown string', 'boom', 'failed', ExitCode.UNEXPECTED],
  ['undefined', undefined, 'failed', ExitCode.UNEXPECTED],
];

describe('stopAdvice: what the operator should do when a run stopped, once for every connector', () => {
  test.each(CASES)('%s is %s, beside its exit code', (_what, err, kind, exit) => {
    expect(stopKind(err)).toBe(kind);
    expect(stopAdvice(err, { resume: 'restart' }).kind).toBe(kind);
    expect(exitCodeFor(err)).toBe(exit);
  });

  test("each kind's cause and advice, in the connector's words for resuming and what that keeps", () => {
    const csv = { resume: 'rerun with --resume', kept: 'answers already paid for are not bought again' };
    const pick = (kind: StopKind): unknown => CASES.find((c) => c[2] === kind)![1];
    const said = Object.fromEntries(
      (['cap', 'account', 'proxy', 'fix-config', 'budget-db', 'store-db', 'platform-later', 'failed'] as const).map((k) => {
        const { cause, advice } = stopAdvice(pick(k), csv);
        return [k, { cause, advice }];
      }),
    );
    expect(said).toEqual({
      cap: {
        cause: 'the spending cap (--max-calls) was reached',
        advice: 'rerun with --resume to continue (answers already paid for are not bought again), with a new --max-calls or none',
      },
      account: { cause: 'the platform refused the account or key', advice: 'fix the key, account, plan or quota, then rerun with --resume' },
      proxy: { cause: 'the proxy refused the connection', advice: 'fix the proxy setting and rerun with --resume' },
      'fix-config': {
        cause: "the shared rate budget cannot be used (its database, user, grants or server's version)",
        advice: 'fix what the error names, then rerun with --resume',
      },
      'budget-db': {
        cause: "the shared rate budget's database could not be reached",
        advice: "rerun with --resume once the budget's database answers again (answers already paid for are not bought again)",
      },
      'store-db': {
        cause: "the result store's database could not be reached",
        advice: "rerun with --resume once the store's database answers again (answers already paid for are not bought again)",
      },
      'platform-later': {
        cause: 'the platform could not be reached, or asked to come back later',
        advice: 'rerun with --resume later, once the platform answers again (answers already paid for are not bought again)',
      },
      failed: { cause: 'the run failed', advice: 'rerun with --resume' },
    });
  });

  test('a failure with exit 2 (a setting, grant or input the error names) says to fix it before resuming: a rerun as it is would stop again', () => {
    const refused = new ToolError('usage', 'the store role may not write');
    expect(stopAdvice(refused, { resume: 'rerun with --resume' })).toEqual({
      kind: 'failed',
      cause: 'the run failed',
      advice: 'fix what the error names, then rerun with --resume',
    });
  });

  test('without a note of what resuming keeps, the advice has no empty parentheses', () => {
    for (const [, err] of CASES) expect(stopAdvice(err, { resume: 'rerun with --run-id nightly' }).advice).not.toMatch(/\(\)|\s{2}/);
    expect(stopAdvice(run(LOCAL_CODES.maxCallsReached), { resume: 'restart' }).advice).toBe('restart to continue, with a new --max-calls or none');
  });
});
