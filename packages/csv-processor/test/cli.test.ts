import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, summaryOf, tempDir } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
let input: string;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
  input = join(dir, 'in.csv');
  await writeFile(input, 'id;strasse;plz;ort\n1;Hauptstraße 5;10115;Berlin\n2;Hauptstraße 5;10115;Berlin\n3;Lindenweg 2;;\n4;broken\n');
});
afterAll(async () => cleanup());

describe('the dq-csv command line', () => {
  it('prints usage with an example on --help', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: dq-csv validate');
    expect(run.stdout).toContain('Example:');
    // What a run cannot start without is marked so.
    expect(run.stdout).toMatch(/--base-url <url> +address API host \(required; or env DQ_BASE_URL\)/);
    expect(run.stdout).toMatch(/--api-key <key> +API key \(required; or env DQ_API_KEY/);
  });

  it.each([
    [['validate', '--output', 'x.csv'], '--input'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--mode', 'phone'], '--mode'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--map', 'street'], '--map'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--map', 'plz=PLZ'], '--map'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--delimiter', ';;'], '--delimiter'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--max-failed', 'lots'], '--max-failed'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--include', 'weather'], '--include'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--country', 'Germany'], '--country'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--threads', '-1'], '--threads'],
    [['validate', '--input', 'a.csv', '--output', 'x.csv', '--colour'], 'colour'],
    [['clean', '--input', 'a.csv'], 'validate'],
    [['validate', '--input', 'a.csv', '--dry-run', '--report', 'r.html'], '--report'],
  ])('exits 2 naming the flag for %j', async (args, flag) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(flag);
  });

  it('names the input file given without --input and how to pass it', async () => {
    const run = await runCli(['validate', 'customers.csv', '--output', 'x.csv']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      'dq-csv: usage: command: unexpected "customers.csv" after "validate": name the input with --input, e.g. dq-csv validate --input customers.csv (see dq-csv --help)',
    );
  });

  it('says that a platform URL is needed when none is given', async () => {
    const run = await runCli([
      'validate',
      '--input',
      input,
      '--output',
      join(dir, 'o.csv'),
      '--delimiter',
      ';',
      '--map',
      'addressLine=strasse,postalCode=plz,locality=ort',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--base-url');
    expect(run.stderr).toContain('DQ_BASE_URL');
  });

  it('refuses an API key with a line break (a key file written with echo) before any call, with exit 2 and without showing the key', async () => {
    const key = 'k3y-from-a-file-42';
    // Port 1: nothing listens there, so a run that sent the key anyway would stop with 75, not 2.
    for (const bad of [`${key}\n`, `${key}\r\n`, `${key} `]) {
      const run = await runCli(
        ['validate', '--input', input, '--output', join(dir, 'key.csv'), '--delimiter', ';', '--map', 'addressLine=strasse,postalCode=plz,locality=ort'],
        { DQ_BASE_URL: 'http://127.0.0.1:1', DQ_API_KEY: bad },
      );
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/the API key holds a (line break|blank) at (its end|position \d+)/);
      expect(run.stderr + run.stdout).not.toContain(key);
    }
  });

  it('names a mapped column that is not in the header', async () => {
    const run = await runCli(['validate', '--input', input, '--output', join(dir, 'o.csv'), '--delimiter', ';', '--map', 'street=Strasse'], {
      DQ_BASE_URL: 'http://127.0.0.1:9',
      DQ_API_KEY: 'k',
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('"Strasse" is not in the header');
  });

  it.each([
    ['a mapped column', ['--map', 'addressLine=strasse,postalCode=plz,locality=ort']],
    ['no --map', []],
  ])('with %s, says which delimiter a one-column header holds when --delimiter was left out', async (_, map) => {
    const run = await runCli(['validate', '--input', input, '--output', join(dir, 'o.csv'), ...map], { DQ_BASE_URL: 'http://127.0.0.1:9', DQ_API_KEY: 'k' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`pass --delimiter ';'`);
  });

  it('without --map and no column named like a field, shows the --map its columns suggest (strasse, plz, ort), mapping nothing unasked', async () => {
    const run = await runCli(['validate', '--input', input, '--output', join(dir, 'o.csv'), '--delimiter', ';'], {
      DQ_BASE_URL: 'http://127.0.0.1:9',
      DQ_API_KEY: 'k',
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(
      'dq-csv: usage: --map: no column is named like a field of address mode (street, houseNumber, addressLine, postalCode, locality, localityLine, country); the header has columns that look like them: check this mapping, then pass it: --map street=strasse,postalCode=plz,locality=ort (see dq-csv --help)',
    );
  });

  it('without --map, says which columns that look like fields were left out, and the --map that would use them', async () => {
    const partial = join(dir, 'partial.csv');
    await writeFile(partial, 'id,street,house_no,zip,city,country\n1,Hauptstraße,5,10115,Berlin,DE\n');
    const run = await runCli(['validate', '--input', partial, '--dry-run']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'dq-csv: hint: no --map given, so only columns named like address fields were mapped (street=street,country=country); the header also has house_no (houseNumber), zip (postalCode), city (locality), which were not. To use them: --map street=street,houseNumber=house_no,postalCode=zip,locality=city,country=country',
    );
    expect(run.stderr.match(/hint:/g)).toHaveLength(1);
  });

  it.each([
    [
      'two that differ in case',
      'street;postalCode;Locality;locality',
      'the header has 2 columns named like the field locality ("Locality", "locality"), case and edge spaces aside; say which one it is, with every field (a --map replaces the columns found by name): --map street=street,postalCode=postalCode,locality=<column>, the column named exactly as in the header (Locality or locality)',
    ],
    ['one with spaces around it', 'street;postalCode; locality;locality', '(" locality" or locality)'],
    ['the same name twice', 'street;postalCode;locality;locality', 'a column whose name is in the header twice cannot be mapped: rename one of the two'],
  ])('without --map, refuses a header with two columns for one field (%s) instead of taking the first one unsaid', async (_, header, said) => {
    const two = join(dir, 'two-localities.csv');
    await writeFile(two, `${header}\nHauptstraße 5;10115;Berlin;Mitte\n`);
    const run = await runCli(['validate', '--input', two, '--output', join(dir, 'o.csv'), '--delimiter', ';', '--country', 'DE'], {
      DQ_BASE_URL: 'http://127.0.0.1:9',
      DQ_API_KEY: 'k',
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(said);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it.each([
    ['a CSV input', 'in.csv', 'o.json', "names a .json file, but the output is written in the input's format, csv (dq-csv does not convert): name it .csv"],
    ['a CSV input', 'in.csv', 'o.ndjson', 'name it .csv'],
    ['an NDJSON input', 'in.ndjson', 'o.csv', "the output is written in the input's format, ndjson (dq-csv does not convert): name it .ndjson"],
  ])("refuses with exit 2, for %s, an --output named for another format (%s to %s) instead of writing that file in the input's", async (_, name, out, said) => {
    const input = join(dir, `format-${name}`);
    await writeFile(input, name.endsWith('.csv') ? 'street;postalCode;locality\nHauptstraße 5;10115;Berlin\n' : '{"street":"Hauptstraße 5"}\n');
    const run = await runCli(['validate', '--input', input, '--output', join(dir, out), '--delimiter', ';'], {
      DQ_BASE_URL: 'http://127.0.0.1:9',
      DQ_API_KEY: 'k',
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(said);
    expect(await stat(join(dir, out)).catch(() => undefined)).toBeUndefined();
  });

  it('estimates a run with --dry-run without calling anything', async () => {
    const run = await runCli([
      'validate',
      '--input',
      input,
      '--dry-run',
      '--delimiter',
      ';',
      '--country',
      'DE',
      '--map',
      'addressLine=strasse,postalCode=plz,locality=ort',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.outcome).toBe('dry-run');
    expect(summary.rows).toBe(3);
    expect(summary.rejects).toBe(1);
    expect(summary.plan).toMatchObject({ invalidInput: 1, distinct: 1, calls: 1, endpoint: 'batch', rateLimitPerSecond: 100, secondsAtRateLimit: 1 });
  });
});
