import { describe, expect, it } from 'vitest';
import { checkEmptyFlags, commandLineRedactor, createFlagParsers, parseFlags } from '../src/cli/index.js';

class UsageProblem extends Error {}
const flags = createFlagParsers((flag, problem) => new UsageProblem(`${flag}: ${problem}`));

describe('command-line flag checks', () => {
  it('accepts a listed choice and refuses another, naming the flag and the choices', () => {
    expect(flags.oneOf('--mode', 'vat', ['address', 'vat'] as const)).toBe('vat');
    expect(() => flags.oneOf('--mode', 'phone', ['address', 'vat'])).toThrow(new UsageProblem('--mode: "phone" is not one of address, vat'));
  });

  it('parses numbers within their range and refuses blanks, fractions where integers are due, and out-of-range values', () => {
    expect(flags.number('--max-failed', '0.05', 0, 1, false)).toBe(0.05);
    expect(flags.number('--batch-size', '500', 1, 100_000, true)).toBe(500);
    expect(() => flags.number('--batch-size', '', 1, 10, true)).toThrow(/--batch-size: "" must be an integer from 1 to 10/);
    expect(() => flags.number('--batch-size', '2.5', 1, 10, true)).toThrow(UsageProblem);
    expect(() => flags.number('--max-failed', '1.5', 0, 1, false)).toThrow(/from 0 to 1/);
    expect(() => flags.number('--concurrency', 'many', 1, 10, true)).toThrow(UsageProblem);
  });

  it('accepts http and https URLs only', () => {
    expect(flags.url('--base-url', 'https://api.example.com/x')).toBe('https://api.example.com/x');
    expect(flags.url('--base-url', undefined)).toBeUndefined();
    expect(() => flags.url('--base-url', 'ftp://example.com')).toThrow(/--base-url: "ftp:\/\/example.com" is not an http\(s\) URL/);
    expect(() => flags.url('--base-url', 'localhost:8080x y')).toThrow(UsageProblem);
    expect(() => flags.url('--base-url', 'https://api.example.com/?key=1')).toThrow(/--base-url: "https:\/\/api.example.com\/\?key=1" has a query/);
    expect(() => flags.url('--base-url', 'https://api.example.com/#x')).toThrow(/has a fragment/);
    // The refused URL is named without its password.
    expect(() => flags.url('--base-url', 'ftp://etl:s3cret-pw@example.com/x')).toThrow(
      new UsageProblem('--base-url: "ftp://etl:[redacted]@example.com/x" is not an http(s) URL'),
    );
  });

  it('names an unknown flag with the nearest known one, and a value flag followed by another flag', () => {
    const options = { 'rate-limit': { type: 'string' }, 'batch-size': { type: 'string' }, resume: { type: 'boolean' }, input: { type: 'string' } } as const;
    const parse = (argv: string[]) => () => parseFlags(argv, options, (f, p) => new UsageProblem(`${f}: ${p}`));
    expect(parse(['--ratelimit', '5'])).toThrow(new UsageProblem("arguments: unknown flag '--ratelimit'; did you mean --rate-limit?"));
    expect(parse(['--rate-limt=5'])).toThrow(new UsageProblem("arguments: unknown flag '--rate-limt'; did you mean --rate-limit?"));
    expect(parse(['--inp', 'a.csv'])).toThrow(/did you mean --input\?/);
    expect(parse(['--colour', 'red'])).toThrow(new UsageProblem("arguments: unknown flag '--colour'"));
    expect(parse(['--batch-size', '--resume'])).toThrow(
      new UsageProblem(
        "arguments: '--batch-size' is followed by another flag where its value belongs: write --batch-size <value> (a value that starts with a dash as --batch-size=-5)",
      ),
    );
    expect(parse(['--batch-size'])).toThrow(/--batch-size <value>' argument missing/);
  });

  it('takes numbers written in decimal only: no hexadecimal, binary or padded text', () => {
    expect(flags.number('--concurrency', '1e3', 1, 4096, true)).toBe(1000);
    for (const text of ['0x10', '0b11', '0o7', ' 5', '5 ', '1_000', 'Infinity']) {
      expect(() => flags.number('--concurrency', text, 1, 4096, true), text).toThrow(`--concurrency: "${text}" must be an integer from 1 to 4096`);
    }
  });

  it("refuses a flag given an empty value, saying what to write; a command line's secrets and URL passwords are redacted", () => {
    const usage = '  --rejects <file>   rejected rows\n  --map <field>=<col>,...';
    expect(() => checkEmptyFlags({ rejects: '', map: ['a=b'] }, usage, (f, p) => new UsageProblem(`${f}: ${p}`))).toThrow(
      new UsageProblem('--rejects: the value is empty: write --rejects <file>, or leave the flag out'),
    );
    expect(() => checkEmptyFlags({ map: ['a=b', ''] }, usage, (f, p) => new UsageProblem(`${f}: ${p}`))).toThrow(/--map <field>=<col>,\.\.\./);
    expect(() => checkEmptyFlags({ rejects: 'r.csv', resume: true }, usage, (f, p) => new UsageProblem(`${f}: ${p}`))).not.toThrow();
    const redact = commandLineRedactor(
      ['--api-key', 'key-123456', '--base-url=http://u:pw-9876@h/'],
      { DQ_API_KEY: 'env-key-4242' },
      ['api-key'],
      ['DQ_API_KEY'],
    );
    expect(redact('key-123456 env-key-4242 http://u:pw-9876@h/ postgres://a:b@db/x')).toBe(
      '[redacted] [redacted] http://u:[redacted]@h/ postgres://a:[redacted]@db/x',
    );
  });

  it('takes off in any case for --store and --budget, never as a folder named OFF', () => {
    expect(flags.engine({ store: 'OFF' })).toEqual({ store: 'off' });
    expect(flags.engine({ store: ' Off ' })).toEqual({ store: 'off' });
    expect(flags.engine({ budget: 'OFF' })).toEqual({ budget: 'off' });
    expect(flags.engine({ store: 'office' })).toEqual({ store: 'office' });
  });

  it('keeps --store as given (resolved by openStore) and reads --max-age as an age, refusing other text', () => {
    expect(flags.engine({ store: 'postgres://etl@db/crm', 'max-age': '12h' })).toEqual({ store: 'postgres://etl@db/crm', maxAgeMs: 12 * 3_600_000 });
    expect(flags.engine({ store: 'off', 'max-age': '0' })).toEqual({ store: 'off', maxAgeMs: 0 });
    expect(() => flags.engine({ 'max-age': 'a month' })).toThrow(/--max-age: "a month" is not an age/);
    // 30 meant as days would buy nearly every answer again: a number other than 0 needs its unit.
    expect(() => flags.engine({ 'max-age': '30' })).toThrow('--max-age: "30" has no unit: write 30d for days, or 30h, 30m or 30s (0 = never reuse)');
    expect(() => flags.engine({ store: ' ' })).toThrow(/--store: is empty/);
  });

  it('turns the engine flags every CLI shares into engine settings, leaving out the ones not given', () => {
    expect(flags.engine({})).toEqual({});
    expect(flags.engine({ concurrency: '8', threads: '0', 'rate-limit': '50' })).toEqual({
      concurrency: 8,
      threads: 0,
      rateLimits: { batch: 50, validate: 50, company: 50 },
    });
    expect(() => flags.engine({ threads: '-1' })).toThrow(/--threads: "-1" must be an integer from 0 to 64/);
    expect(() => flags.engine({ concurrency: '0' })).toThrow(/--concurrency/);
    expect(() => flags.engine({ 'rate-limit': 'fast' })).toThrow(/--rate-limit/);
  });

  it('--account-db gives the budget and the store in one setting; --budget overrides or switches it off; URLs with a password are never echoed', () => {
    const db = 'postgres://etl:s3cret@db.internal:5432/dq';
    expect(flags.engine({ 'account-db': db })).toEqual({ budget: db, store: db });
    expect(flags.engine({ 'account-db': db, store: 'postgres://other/db' })).toEqual({ budget: db, store: 'postgres://other/db' });
    expect(flags.engine({ 'account-db': db, budget: 'off' })).toEqual({ budget: 'off', store: db });
    expect(flags.engine({ budget: 'postgresql://h/budget', account: 'acme', 'max-calls': '500' })).toEqual({
      budget: 'postgresql://h/budget',
      account: 'acme',
      maxCalls: 500,
    });
    expect(() => flags.engine({ 'account-db': 'mysql://etl:s3cret@h/db' })).toThrow(/--account-db: must be a postgres:\/\//);
    expect(() => flags.engine({ 'account-db': 'mysql://etl:s3cret@h/db' })).not.toThrow(/s3cret/);
    expect(() => flags.engine({ budget: 'on' })).toThrow(/--budget/);
    expect(() => flags.engine({ 'max-calls': '0' })).toThrow(/--max-calls/);
    expect(() => flags.engine({ 'max-calls': '1.5' })).toThrow(/--max-calls/);
    expect(() => flags.engine({ account: ' ' })).toThrow(/--account/);
  });
});
