import { execFileSync, spawn } from 'node:child_process';
import { link, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { checkpointRecords, CLI, completed, readCsv, runCli, startCli, summaryOf, tempDir } from './helpers.js';

let sandbox: Sandbox;
let slow: Sandbox;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] } });
  // Each batch call takes a second: a run on it lasts long enough for a second run to meet it.
  slow = await startSandbox({
    port: 0,
    config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }], faults: { batch: { latencyMs: 1000 } } },
  });
  ({ dir, cleanup } = await tempDir());
});
afterAll(async () => {
  await Promise.all([sandbox.close(), slow.close()]);
  await cleanup();
});

const env = (s: Sandbox = sandbox) => ({ DQ_BASE_URL: s.url, DQ_API_KEY: DEFAULT_API_KEY });
const MAP = ['--delimiter', ';', '--country', 'DE', '--map', 'addressLine=strasse,postalCode=plz,locality=ort,country=land'];

/** A folder of its own holding a sample input; returns the folder and the input's path. */
async function caseDir(name: string, rows = 200): Promise<{ folder: string; input: string; content: string }> {
  const folder = join(dir, name);
  await mkdir(folder);
  const content = makeSampleCsv(rows, 5);
  const input = join(folder, 'in.csv');
  await writeFile(input, content);
  return { folder, input, content };
}

describe('files a run would write over', () => {
  it.each([
    ['--output is --input', async (f: string, input: string) => ['--input', input, '--output', input]],
    [
      '--output is a symlink to the input',
      async (f: string, input: string) => (await symlink(input, join(f, 'link.csv')), ['--input', input, '--output', join(f, 'link.csv')]),
    ],
    [
      '--output is a hard link to the input',
      async (f: string, input: string) => (await link(input, join(f, 'hard.csv')), ['--input', input, '--output', join(f, 'hard.csv')]),
    ],
    ['--output is the input spelled another way', async (f: string, input: string) => ['--input', input, '--output', join(f, 'sub', '..', 'in.csv')]],
    ['--rejects is the input', async (f: string, input: string) => ['--input', input, '--output', join(f, 'out.csv'), '--rejects', input]],
    ['--rejects is --output', async (f: string, input: string) => ['--input', input, '--output', join(f, 'out.csv'), '--rejects', join(f, 'out.csv')]],
    ['--report is the input', async (f: string, input: string) => ['--input', input, '--output', join(f, 'out.csv'), '--report', input]],
    ['--report is --output', async (f: string, input: string) => ['--input', input, '--output', join(f, 'out.csv'), '--report', join(f, 'out.csv')]],
    ['--report is --rejects', async (f: string, input: string) => ['--input', input, '--output', join(f, 'out.csv'), '--report', join(f, 'out.rejects.csv')]],
    [
      '--rejects is the checkpoint',
      async (f: string, input: string) => ['--input', input, '--output', join(f, 'out.csv'), '--rejects', join(f, 'out.csv.checkpoint.json')],
    ],
  ])('refuses with exit 2 and writes nothing when %s', async (name, argsFor) => {
    const { folder, input, content } = await caseDir(name.replace(/\W+/g, '-'));
    await mkdir(join(folder, 'sub'));
    const args = await argsFor(folder, input);
    const before = (await readdir(folder)).sort();
    const run = await runCli(['validate', ...args, ...MAP], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/is the input file|are the same file/);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(await readFile(input, 'utf8')).toBe(content);
    expect((await readdir(folder)).sort()).toEqual(before);
  });

  it.each([
    ['the input is a pipe (<(zcat …))', 'input'],
    ['the input is a folder', 'input'],
    ['the output is a pipe', 'output'],
    ['the output is a folder', 'output'],
    ['the report is a folder', 'report'],
  ])('refuses with exit 2, no stack trace, when %s', async (name, which) => {
    const { folder, input } = await caseDir(name.replace(/\W+/g, '-'));
    const odd = join(folder, 'odd');
    if (name.includes('folder')) await mkdir(odd);
    else execFileSync('mkfifo', [odd]);
    const args =
      which === 'input'
        ? ['--input', odd, '--output', join(folder, 'out.csv')]
        : which === 'output'
          ? ['--input', input, '--output', odd]
          : ['--input', input, '--output', join(folder, 'out.csv'), '--report', odd];
    const run = await runCli(['validate', ...args, ...MAP, '--store', 'off'], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(name.includes('folder') ? /is a folder/ : /is a pipe/);
    expect(run.stderr).toContain(odd);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 2 naming the folder when the output folder does not exist, and creates nothing', async () => {
    const { folder, input } = await caseDir('no-folder');
    const missing = join(folder, 'not-there');
    const run = await runCli(['validate', '--input', input, '--output', join(missing, 'out.csv'), ...MAP], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`the folder ${missing}`);
    expect(run.stderr).toContain('does not exist');
    expect(run.stderr).not.toContain('--resume');
    expect(await readdir(folder)).toEqual(['in.csv']);
  });

  it('exits 2 naming the folder when the rejects folder does not exist', async () => {
    const { folder, input } = await caseDir('no-rejects-folder');
    const missing = join(folder, 'gone');
    const run = await runCli(['validate', '--input', input, '--output', join(folder, 'out.csv'), '--rejects', join(missing, 'r.csv'), ...MAP], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`the folder ${missing}`);
    expect(await readdir(folder)).toEqual(['in.csv']);
  });
});

describe('two runs on one output', () => {
  it("refuses the second with exit 75 naming the first one's pid; a kill -9 leaves a lock the next run takes over", async () => {
    const { folder, input } = await caseDir('lock', 400);
    const output = join(folder, 'out.csv');
    const args = ['validate', '--input', input, '--output', output, ...MAP, '--batch-size', '50', '--concurrency', '1'];
    const first = startCli(args, env(slow));
    const exited = new Promise<number | null>((resolve) => first.on('exit', (code) => resolve(code)));
    try {
      // The first run holds the lock from its start to its end.
      for (let i = 0; !(await stat(`${output}.lock`).catch(() => undefined)); i++) {
        if (i > 600) throw new Error('the first run never took its lock');
        await new Promise((r) => setTimeout(r, 50));
      }
      const second = await runCli(args, env());
      expect(second.code, second.stderr).toBe(75);
      expect(second.stderr).toContain(`pid ${first.pid}`);
      expect(second.stderr).toContain(output);
      expect(first.exitCode, 'the first run was still running').toBe(null);
    } finally {
      first.kill('SIGKILL');
    }
    await exited;
    // The killed run's lock is still there; its pid is dead, so the next run takes it over.
    expect(JSON.parse(await readFile(`${output}.lock`, 'utf8')).pid).toBe(first.pid);
    const third = await runCli([...args, '--resume'], env());
    expect(third.code, third.stderr).toBe(0);
    expect(summaryOf(third).rows).toBe(400);
    const { rows } = await readCsv(output, { delimiter: ';' });
    expect(rows.map((r) => r[0])).toEqual((await readCsv(input, { delimiter: ';' })).rows.map((r) => r[0]));
    expect(await stat(`${output}.lock`).catch(() => undefined)).toBeUndefined();
  });
});

describe('two runs on one rejects file', () => {
  it("refuses the second with exit 75 naming the first one's pid, though their outputs differ", async () => {
    const { folder, input } = await caseDir('shared-rejects', 400);
    const rejects = join(folder, 'bad-rows.csv');
    const run = (output: string) => [
      'validate',
      '--input',
      input,
      '--output',
      join(folder, output),
      '--rejects',
      rejects,
      ...MAP,
      '--batch-size',
      '50',
      '--concurrency',
      '1',
    ];
    const first = startCli(run('a.csv'), env(slow));
    const exited = new Promise<number | null>((resolve) => first.on('exit', (code) => resolve(code)));
    try {
      for (let i = 0; !(await stat(join(folder, 'a.csv.lock')).catch(() => undefined)); i++) {
        if (i > 600) throw new Error('the first run never took its lock');
        await new Promise((r) => setTimeout(r, 50));
      }
      const second = await runCli(run('b.csv'), env());
      expect(second.code, second.stderr).toBe(75);
      expect(second.stderr).toContain(`pid ${first.pid}`);
      expect(second.stderr).toContain(rejects);
      expect(first.exitCode, 'the first run was still running').toBe(null);
      expect(await stat(join(folder, 'b.csv')).catch(() => undefined)).toBeUndefined();
    } finally {
      first.kill('SIGKILL');
    }
    await exited;
  });
});

describe('an output whose disk fills up', () => {
  it('stops with exit 1 naming the output and EFBIG, prints the summary, and --resume with room finishes every row', async () => {
    const { folder, input } = await caseDir('output-full', 2000);
    const output = join(folder, 'out.csv');
    const args = ['validate', '--input', input, '--output', output, ...MAP, '--store', 'off', '--batch-size', '100', '--rate-limit', '0'];
    // A file-size limit on the process stops the output growing the way a full disk does (EFBIG
    // instead of ENOSPC), and only there: the checkpoint and the rejects stay far below it.
    const child = spawn('prlimit', ['--fsize=40000', process.execPath, CLI, ...args], { env: { ...process.env, ...env() }, stdio: ['ignore', 'pipe', 'pipe'] });
    const full = await completed(child);
    expect(full.code, full.stderr).toBe(1);
    expect(full.stderr).toContain(`dq-csv: output-io: cannot write the output ${output}`);
    expect(full.stderr).toContain('EFBIG');
    expect(full.stderr).toContain('--resume');
    expect(full.stderr).not.toMatch(/\n\s+at /);
    expect(summaryOf(full)).toMatchObject({ outcome: 'stopped', exitCode: 1, error: { code: 'output-io' } });
    // The summary counts what is written, not the batch the disk refused.
    expect(summaryOf(full).rows + summaryOf(full).rejects).toBe(await checkpointRecords(output));
    const resumed = await runCli([...args, '--resume'], env());
    expect(resumed.code, resumed.stderr).toBe(0);
    const { rows } = await readCsv(output, { delimiter: ';' });
    expect(rows.map((r) => r[0])).toEqual((await readCsv(input, { delimiter: ';' })).rows.map((r) => r[0]));
  });

  it('stops the same way, without a stack trace, when not even the header fits', async () => {
    const { folder, input } = await caseDir('output-full-at-once', 10);
    const output = join(folder, 'out.csv');
    const args = ['validate', '--input', input, '--output', output, ...MAP, '--store', 'off'];
    const child = spawn('prlimit', ['--fsize=200', process.execPath, CLI, ...args], { env: { ...process.env, ...env() }, stdio: ['ignore', 'pipe', 'pipe'] });
    const full = await completed(child);
    expect(full.code, full.stderr).toBe(1);
    expect(full.stderr).toContain(`dq-csv: output-io: cannot write the output ${output}`);
    expect(full.stderr).toContain('no input record is written yet');
    expect(full.stderr).not.toMatch(/\n\s+at /);
    expect(summaryOf(full)).toMatchObject({ outcome: 'stopped', exitCode: 1, error: { code: 'output-io' } });
  });
});

describe('input values in the output', () => {
  const HEADER = 'id;strasse;plz;ort;land;telefon\n';
  const BODY =
    '1;Hauptstraße 5;10115;Berlin;DE;+49 711 123456\n' +
    "2;Lindenweg 2;80336;München;DE;-2+3+cmd|' /C calc'!A0\n" +
    '3;=HYPERLINK("http://x");01067;Dresden;DE;@SUM(A1)\n' +
    '=1+2;short\n';

  it('come out byte for byte by default, formula-like or not', async () => {
    const { folder } = await caseDir('verbatim', 1);
    const input = join(folder, 'cells.csv');
    await writeFile(input, HEADER + BODY);
    const output = join(folder, 'out.csv');
    const run = await runCli(['validate', '--input', input, '--output', output, ...MAP, '--max-failed', '1'], env());
    expect(run.code, run.stderr).toBe(0);
    const lines = (await readFile(output, 'utf8')).split('\n');
    expect(lines[1]).toMatch(/^1;Hauptstraße 5;10115;Berlin;DE;\+49 711 123456;/);
    expect(lines[2]).toMatch(/^2;Lindenweg 2;80336;München;DE;-2\+3\+cmd\|' \/C calc'!A0;/);
    expect(lines[3]).toMatch(/^3;"=HYPERLINK\(""http:\/\/x""\)";01067;Dresden;DE;@SUM\(A1\);/);
    const rejects = await readCsv(join(folder, 'out.rejects.csv'));
    expect(rejects.rows.map((r) => r[3])).toEqual(['=1+2;short']);
  });

  it('with --spreadsheet-safe, start with a quote when a spreadsheet would run them, in the output and the rejects', async () => {
    const { folder } = await caseDir('spreadsheet', 1);
    const input = join(folder, 'cells.csv');
    await writeFile(input, HEADER + BODY + '4;\tTab;10115;Berlin;DE;"\rcr"\n');
    const output = join(folder, 'out.csv');
    const run = await runCli(['validate', '--input', input, '--output', output, ...MAP, '--max-failed', '1', '--spreadsheet-safe'], env());
    expect(run.code, run.stderr).toBe(0);
    const { rows } = await readCsv(output, { delimiter: ';' });
    expect(rows.map((r) => r.slice(0, 6))).toEqual([
      ['1', 'Hauptstraße 5', '10115', 'Berlin', 'DE', "'+49 711 123456"],
      ['2', 'Lindenweg 2', '80336', 'München', 'DE', "'-2+3+cmd|' /C calc'!A0"],
      ['3', '\'=HYPERLINK("http://x")', '01067', 'Dresden', 'DE', "'@SUM(A1)"],
      ['4', "'\tTab", '10115', 'Berlin', 'DE', "'\rcr"],
    ]);
    const rejects = await readCsv(join(folder, 'out.rejects.csv'));
    expect(rejects.rows.map((r) => r[3])).toEqual(["'=1+2;short"]);
  });
});
