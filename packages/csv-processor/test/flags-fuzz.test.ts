import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, runCli, summaryOf, tempDir, useSandbox, unlimited, type CliRun } from './helpers.js';

// Every flag a user can get wrong, run as the real CLI against the sandbox: a mistake is refused
// before anything is paid for, in one line naming the flag, with exit 2, no stack and no secret.
const sandbox = useSandbox(unlimited());
let dir: string;
let cleanup: () => Promise<void>;
let input: string;
let odd: string;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
  input = join(dir, 'in.csv');
  // A complete address the sandbox answers (and bills): a run that got past its flags would pay.
  await writeFile(input, 'street,postalCode,locality,country\nHauptstraße 5,10115,Berlin,DE\n');
  // Column names --map can only reach quoted: a comma, spaces at the ends, a quote, an "=".
  odd = join(dir, 'odd.csv');
  await writeFile(odd, 'id, PLZ ,"Strasse, Nr",Ort=Stadt,"say ""hi""",\n1,10115,Hauptstraße 5,Berlin,x,\n');
});
afterAll(async () => cleanup());

const SECRET = 's3cret-pass-77';

/** A run of `validate` on the sample input with `args` added; output in the temp folder. */
const validate = (args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> =>
  runCli(['validate', '--input', input, '--output', join(dir, `out-${Math.random().toString(36).slice(2)}.csv`), '--store', 'off', ...args], {
    ...sandbox.env(),
    ...env,
  });

/** What every refusal looks like: exit 2, a line naming the flag, nothing unforeseen, no stack, no log line. */
function expectRefused(run: CliRun, flag: string, says: string): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr.startsWith(`dq-csv: usage: ${flag}`), run.stderr).toBe(true);
  expect(run.stderr).toContain(says);
  expect(run.stderr).not.toMatch(/unexpected error|this is a bug|\n\s+at |^\{/m);
  expect(run.stdout).toBe('');
}

/** Runs `count` processes at a time: the rows of a table, each a CLI process, in a few seconds. */
async function inBatches<T, R>(items: readonly T[], run: (item: T) => Promise<R>, count = 6): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: count }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await run(items[i]!);
      }
    }),
  );
  return results;
}

describe('dq-csv flags a user can get wrong', () => {
  const refusals: Array<[string, string[], string, string]> = [
    // --map given twice adds up: a field in both is mapped twice, not replaced unseen.
    ['a field in two --map flags', ['--map', 'street=street,locality=locality', '--map', 'street=postalCode'], '--map', 'field "street" is mapped twice'],
    // An empty value (an unset variable in a script) stands for no file and no default.
    ['an empty --rejects', ['--rejects='], '--rejects', 'the value is empty: write --rejects <file>, or leave the flag out'],
    ['an empty --report', ['--report', ''], '--report', 'the value is empty: write --report <file.html>'],
    ['an empty --include', ['--include='], '--include', 'the value is empty: write --include <list>'],
    ['an empty --rate-limit', ['--rate-limit='], '--rate-limit', 'the value is empty: write --rate-limit <rps>'],
    // --map: quoting
    [
      'a quote never closed',
      ['--map', 'street="Strasse, Nr'],
      '--map',
      'the quote after street= is not closed; end the name with " (write "" for a quote inside it)',
    ],
    ['text after a closing quote', ['--map', 'street="Strasse" Nr,locality=Ort'], '--map', '"street="Strasse" Nr": text after the closing quote of street='],
    [
      'an entry without a column',
      ['--map', 'street=,locality=Ort'],
      '--map',
      '"street=" is not <field>=<column>, e.g. street=Strasse (quote a column holding a comma: street="Strasse, Nr")',
    ],
    ['a field of another mode', ['--map', 'zip=PLZ'], '--map', '"zip" is not a address field'],
    ['a field mapped twice', ['--map', 'street=a,street=b'], '--map', 'field "street" is mapped twice'],
    // What held before, kept so.
    ['a missing value at the end', ['--rate-limit'], 'arguments', "Option '--rate-limit <value>' argument missing"],
    ['a value that is another flag', ['--batch-size', '--resume'], 'arguments', '--batch-size'],
    ['an unknown flag', ['--ratelimit', '5'], 'arguments', "'--ratelimit'"],
    ['a value for a switch', ['--resume=yes'], 'arguments', "'--resume' does not take an argument"],
    ['a positional left over', ['customers.csv'], 'command', 'unexpected "customers.csv" after "validate"'],
    ...(['NaN', 'Infinity', '1.5', '-1', '1_000'] as const).map((n): [string, string[], string, string] => [
      `--batch-size ${n}`,
      [`--batch-size=${n}`],
      '--batch-size',
      `"${n}" must be an integer from 1 to 100000`,
    ]),
    ['--max-failed 5%', ['--max-failed', '5%'], '--max-failed', '"5%" must be a number from 0 to 1'],
    ['--threads 2^31', ['--threads', '2147483648'], '--threads', 'must be an integer from 0 to 64'],
    ['--max-calls past 2^53', ['--max-calls', '9007199254740993'], '--max-calls', 'must be an integer from 1 to 9007199254740991'],
    ['--max-age in weeks', ['--max-age', '2w'], '--max-age', '"2w" is not an age: use e.g. 30d, 12h, 90m or 45s'],
    ['--max-age without a unit', ['--max-age', '30'], '--max-age', '"30" has no unit: write 30d for days'],
    ['--max-age in milliseconds', ['--max-age', '500ms'], '--max-age', 'is not an age'],
    ['--delimiter of two characters', ['--delimiter', ';;'], '--delimiter', 'must be one ASCII character'],
    ['--country as a name', ['--country', 'Germany'], '--country', '"Germany" is not a two-letter country code'],
    ['--encoding UTF-8', ['--encoding', 'UTF-8'], '--encoding', '"UTF-8" is not one of utf8, latin1, windows-1252'],
    ['--budget not postgres', ['--budget', `mysql://u:${SECRET}@db/x`], '--budget', 'must be a postgres://'],
  ];
  let refused: CliRun[];
  beforeAll(async () => {
    refused = await inBatches(refusals, ([, args]) => validate(args));
  }, 60_000);

  it.each(refusals.map((row, i) => [row[0], i] as const))('refuses %s with exit 2, naming the flag', (_, i) => {
    const [, , flag, says] = refusals[i]!;
    expectRefused(refused[i]!, flag, says);
  });

  it.concurrent.each<[string, string[], Record<string, string>]>([
    ['--base-url', ['--base-url', `ftp://etl:${SECRET}@api.example.com`], {}],
    ['--base-url=', [`--base-url=ftp://etl:${SECRET}@api.example.com/x`], {}],
    ['--realtime-url', ['--realtime-url', `ftp://etl:${SECRET}@rt.example.com`], {}],
    ['--base-url', [], { DQ_BASE_URL: `ftp://etl:${SECRET}@api.example.com` }],
  ])('names a URL it refuses (%s %j %j) without its password', async (flag, args, env) => {
    const run = await validate(args, env);
    expectRefused(run, flag.replace('=', ''), `"ftp://etl:[redacted]@`);
    expect(run.stderr).not.toContain(SECRET);
  });

  it('maps columns whose names hold a comma, spaces at the ends, a quote, an "=" or nothing, quoted', async () => {
    const run = await runCli(
      [
        'validate',
        '--input',
        odd,
        '--dry-run',
        '--country',
        'DE',
        '--map',
        'street="Strasse, Nr", postalCode=" PLZ " ,locality=Ort=Stadt,addressLine="say ""hi""",houseNumber=""',
      ],
      sandbox.env(),
    );
    expect(run.code, run.stderr).toBe(0);
    // The row is read through the quoted names: a complete address, one call; not an invalid input.
    expect(summaryOf(run).plan).toMatchObject({ invalidInput: 0, distinct: 1, calls: 1 });
  });

  it('adds up the entries of --map given more than once; any other flag given twice counts as its last', async () => {
    const tr = join(dir, 'tr.csv');
    await writeFile(tr, 'court,type,number\nBerlin,HRB,12345\n');
    const run = await runCli(
      ['validate', '--input', tr, '--dry-run', '--mode', 'address', '--mode', 'tr', '--map', 'trCourt=court,trType=type', '--map', 'trNo=number'],
      sandbox.env(),
    );
    expect(run.code, run.stderr).toBe(0);
    // All three fields read: a register search to make, not an invalid input.
    expect(summaryOf(run).plan).toMatchObject({ invalidInput: 0, distinct: 1, calls: 1, endpoint: 'company' });
  });

  it('says how to map a header column with spaces at its ends that --map names without them', async () => {
    const run = await runCli(['validate', '--input', odd, '--dry-run', '--map', 'street="Strasse, Nr",postalCode=PLZ,locality=Ort=Stadt'], sandbox.env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('column "PLZ" is not in the header');
    expect(run.stderr).toContain(`the header has " PLZ ", with spaces around it: quote it to map it, postalCode=" PLZ "`);
  });

  it('paid for nothing while refusing; the same flags given once pay for the one call', async () => {
    expect(billable(sandbox)).toBe(0);
    const run = await validate(['--rate-limit', '50']);
    expect(run.code, run.stderr).toBe(0);
    expect(billable(sandbox)).toBe(1);
  });
});
