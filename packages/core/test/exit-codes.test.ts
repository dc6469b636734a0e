import { describe, expect, test } from 'vitest';
import { DqError, ExitCode, PlatformError, TransportError, defineErrorCodes } from '../src/errors/index.js';
import { exitCodeFor } from '../src/engine/index.js';

const ToolErrorBase = defineErrorCodes('dq-tool', {
  usage: { exit: ExitCode.USAGE },
  'output-locked': { exit: ExitCode.TEMPFAIL },
  'bad-input': { exit: ExitCode.USAGE, retriable: false },
});
class ToolError extends ToolErrorBase {
  override name = 'ToolError';
}

const report = (records: number, unavailable: number, invalidInput = 0) => ({
  records,
  byStatus: { accepted: records - unavailable - invalidInput, review: 0, invalid: 0, 'invalid-input': invalidInput, 'unsupported-country': 0, unavailable },
});

describe('one error and exit policy', () => {
  test('a package error defined once is a DqError with its code, exit code and retriability, and a usage error names the flag and the help', () => {
    const locked = new ToolError('output-locked', 'out.csv is locked by pid 42');
    expect(locked).toBeInstanceOf(DqError);
    expect(locked).toBeInstanceOf(ToolError);
    expect({ name: locked.name, code: locked.code, exit: locked.exitCode, retriable: locked.retriable }).toEqual({
      name: 'ToolError',
      code: 'output-locked',
      exit: 75,
      retriable: true,
    });
    const usage = ToolError.usage('--mode', 'must be one of address, company');
    expect(usage).toBeInstanceOf(ToolError);
    expect(usage.message).toBe('--mode: must be one of address, company (see dq-tool --help)');
    expect(exitCodeFor(usage)).toBe(2);
    expect(exitCodeFor(locked)).toBe(75);
  });

  test('errors map to the README table: 1 unexpected, 2 usage, 3 account, 5 spending cap, 75 temporary', () => {
    expect(exitCodeFor(new Error('bug'))).toBe(1);
    expect(exitCodeFor(new DqError('bad config', { code: 'config-invalid', retriable: false }))).toBe(2);
    expect(exitCodeFor(new PlatformError('key refused', { code: 'invalid-key', status: 401, retriable: false, scope: 'run' }))).toBe(3);
    expect(exitCodeFor(new PlatformError('forbidden', { code: 'forbidden', status: 403, retriable: false }))).toBe(3);
    expect(exitCodeFor(new DqError('cap', { code: 'max-calls-reached', retriable: false }))).toBe(5);
    expect(exitCodeFor(new PlatformError('down', { code: 'service-unavailable', status: 503, retriable: true, scope: 'run' }))).toBe(75);
    expect(exitCodeFor(new TransportError('reset', { code: 'connection-error', retriable: true }))).toBe(75);
    expect(exitCodeFor(new DqError('gone', { code: 'some-client-error', status: 404, retriable: false }))).toBe(1);
  });

  test('completed runs: 0 clean, 4 past --max-failed, 75 when every answerable record was unavailable; rejects count as failed', () => {
    expect(exitCodeFor({ report: report(10, 0) })).toBe(0);
    expect(exitCodeFor({ report: report(10, 1) })).toBe(4);
    expect(exitCodeFor({ report: report(10, 1), maxFailed: 0.1 })).toBe(0);
    expect(exitCodeFor({ report: report(10, 8, 2) })).toBe(75);
    expect(exitCodeFor({ report: report(10, 0), rejects: 1, maxFailed: 0.05 })).toBe(4);
    expect(exitCodeFor({ report: report(10, 0), rejects: 1, maxFailed: 0.1 })).toBe(0);
  });
});
