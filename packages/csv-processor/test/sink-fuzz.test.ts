import { spawn } from 'node:child_process';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { seededRandom, type Rand } from '@dq/test-support/random';
import { CLI, completed, readCsv, runCli, summaryOf, unlimited, useSandbox, useTempDir, type CliRun } from './helpers.js';

const dir = useTempDir('dq-csv-sink-fuzz-');
const sandbox = useSandbox(unlimited());

/** Pieces of cell text that CSV writers, spreadsheets and readers trip over. */
const PIECES = [
  '=1+1',
  '+49 711',
  '-5',
  '@SUM(A1)',
  '\t',
  '\r',
  '\n',
  '\r\n',
  "'",
  '"',
  '""',
  ',',
  ';',
  '|',
  ' ',
  '\uFEFF',
  '<script>',
  '😀',
  '\u2028',
  'Straße',
  "-2+3+cmd|' /C calc'!A0",
  'x',
];

function cell(rand: Rand): string {
  let text = '';
  for (let n = rand.int(0, 4); n > 0; n--) text += rand.pick(PIECES);
  return text;
}

/** A CSV cell as a careful writer quotes it for `delimiter`. */
function quoted(value: string, delimiter: string): string {
  return /["\r\n]/.test(value) || value.includes(delimiter) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** A cell the spreadsheet-safe rule writes: no formula start left, and one leading quote to take off. */
function restored(cell: string): string {
  expect(cell, 'a cell a spreadsheet would run').not.toMatch(/^[=+\-@\t\r]/);
  return cell.startsWith("'") ? cell.slice(1) : cell;
}

describe('dq-csv output cells', () => {
  it('come out byte for byte (or, with --spreadsheet-safe, one quote away from it), every row in order, for seeded hostile cells', async () => {
    for (const seed of [11, 12, 13, 14]) {
      const rand = seededRandom(seed);
      const delimiter = rand.pick([',', ';', '\t', '|']);
      const safe = seed % 2 === 0;
      const header = ['id', 'street', 'postalCode', 'locality', 'country', 'note', 'extra'];
      const rows: string[][] = [];
      for (let i = 0; i < 40; i++) rows.push([`r${i}`, cell(rand), '10115', 'Berlin', 'DE', cell(rand), cell(rand)]);
      const input = join(dir, `fuzz-${seed}.csv`);
      await writeFile(input, [header, ...rows].map((r) => r.map((v) => quoted(v, delimiter)).join(delimiter)).join(rand.pick(['\n', '\r\n'])) + '\n');
      const output = join(dir, `fuzz-${seed}.out.csv`);
      const run = await runCli(
        [
          'validate',
          '--input',
          input,
          '--output',
          output,
          '--delimiter',
          delimiter === '\t' ? '\\t' : delimiter,
          '--store',
          'off',
          ...(safe ? ['--spreadsheet-safe'] : []),
        ],
        sandbox.env(),
      );
      expect(run.code, `seed ${seed}: ${run.stderr}`).toBe(0);
      expect(summaryOf(run).rows, `seed ${seed}`).toBe(rows.length);
      const written = await readCsv(output, { delimiter });
      const back = (c: string) => (safe ? restored(c) : c);
      expect(written.header.slice(0, header.length).map(back), `seed ${seed}`).toEqual(header);
      expect(
        written.rows.map((r) => r.slice(0, header.length).map(back)),
        `seed ${seed}`,
      ).toEqual(rows);
      if (safe) for (const r of written.rows) for (const c of r.slice(header.length)) restored(c);
      const rejects = await readCsv(join(dir, `fuzz-${seed}.out.rejects.csv`));
      expect(rejects.rows, `seed ${seed}`).toEqual([]);
    }
  });
});

/**
 * Runs the CLI so that a file's permissions count: as root (which may write any file) without the
 * capability that lets it, else as the user the tests run as.
 */
function runRestricted(args: string[]): Promise<CliRun> {
  const command = process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-dac_override', process.execPath] : [process.execPath];
  const child = spawn(command[0]!, [...command.slice(1), CLI, ...args], { env: { ...process.env, ...sandbox.env() }, stdio: ['ignore', 'pipe', 'pipe'] });
  return completed(child);
}

describe('a rejects file that cannot be opened', () => {
  const INPUT = 'street,postalCode,locality,country\nHauptstr. 5,10115,Berlin,DE\nLindenweg 2,80336,München,DE\n';

  it("refuses with exit 2 naming it and what to do, and leaves the earlier run's output as it was", async () => {
    const input = join(dir, 'again.csv');
    await writeFile(input, INPUT);
    const output = join(dir, 'again.out.csv');
    const first = await runCli(['validate', '--input', input, '--output', output, '--store', 'off'], sandbox.env());
    expect(first.code, first.stderr).toBe(0);
    const before = await readFile(output);
    const rejects = join(dir, 'again.out.rejects.csv');
    await chmod(rejects, 0o444);
    const second = await runRestricted(['validate', '--input', input, '--output', output, '--store', 'off']);
    expect(second.code, second.stderr).toBe(2);
    expect((await readFile(output)).equals(before), 'the earlier output was emptied').toBe(true);
    expect(second.stderr).toContain(`cannot open the rejects file ${rejects} for writing: permission denied (EACCES)`);
    expect(second.stderr).not.toMatch(/\n\s+at /);
  });

  it('leaves no output file behind when the run created it', async () => {
    const input = join(dir, 'fresh.csv');
    await writeFile(input, INPUT);
    const rejects = join(dir, 'fresh-rejects.csv');
    await writeFile(rejects, 'line,code,reason,raw\n');
    await chmod(rejects, 0o444);
    const output = join(dir, 'fresh.out.csv');
    const run = await runRestricted(['validate', '--input', input, '--output', output, '--rejects', rejects, '--store', 'off']);
    expect(run.code, run.stderr).toBe(2);
    expect((await readdir(dir)).filter((f) => f.startsWith('fresh.out'))).toEqual([]);
    expect(run.stderr).toContain(`the rejects file ${rejects}`);
    expect(await readFile(rejects, 'utf8')).toBe('line,code,reason,raw\n');
  });
});
