import { readFileSync, rmSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DqError } from '../src/errors/index.js';
import { cliFailure } from '../src/cli/run-cli.js';
import { StoreError } from '../src/store/errors.js';

describe('the line a CLI prints for the error that ended it', () => {
  it('is code and message for a foreseen error', () => {
    const f = cliFailure('dq-x', new DqError('--store is empty', { code: 'config-invalid', retriable: false }));
    expect(f).toEqual({ exitCode: 2, text: 'dq-x: config-invalid: --store is empty\n' });
  });

  it('is code and message for a write the machine refused (exit 1, its own code), not a bug', () => {
    const f = cliFailure('dq-kafka', new StoreError('store-io', 'the result store /s cannot be used: the disk is full (ENOSPC)'));
    expect(f).toEqual({ exitCode: 1, text: 'dq-kafka: store-io: the result store /s cannot be used: the disk is full (ENOSPC)\n' });
  });

  it('is one line for an unexpected error (a bug), the stack in a file of its own readable by the user only, secrets redacted in both', () => {
    const bug = new TypeError('cannot read properties of undefined (reading "rows") with key s3cr3t');
    const f = cliFailure('dq-x', bug, (t) => t.replaceAll('s3cr3t', '[redacted]'));
    expect(f.exitCode).toBe(1);
    const m =
      /^dq-x: unexpected error: cannot read properties of undefined \(reading "rows"\) with key \[redacted\]; this is a bug in dq-x: please report it with (\S+) \(the details\)\n$/.exec(
        f.text,
      );
    expect(m, f.text).not.toBeNull();
    const file = m![1]!;
    try {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const details = readFileSync(file, 'utf8');
      expect(details).toContain('TypeError: cannot read properties of undefined');
      expect(details).toMatch(/\n\s+at /);
      expect(details).not.toContain('s3cr3t');
    } finally {
      rmSync(file, { force: true });
    }
  });
});
