import { execFileSync, spawn } from 'node:child_process';
import { link, lstat, mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { checkpointPast, checkpointRecords, CLI, completed, readCsv, runCli, runCliWithFileSizeLimit, startCli, summaryOf, tempDir } from './helpers.js';

let sandbox: Sandbox;
let slow: Sandbox;
let steady: Sandbox;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] } });
  // Each batch call takes a second: a run on it lasts long enough for a second run to meet it.
  slow = await startSandbox({
    port: 0,
    config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }], faults: { batch: { latencyMs: 1000 } } },
  });
  // A few milliseconds per call: a run lasts long enough to be killed after its first checkpoints.
  steady = await startSandbox({
    port: 0,
    config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }], faults: { batch: { latencyMs: 5 } } },
  });
  ({ dir, cleanup } = await tempDir());
});
afterAll(async () => {
  await Promise.all([sandbox.close(), slow.close(), steady.close()]);
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
    // `..` after a symlinked folder leads up from its target, as for the kernel (and the shell, and
    // the report's own write): elsewhere/lnk/.. is the case folder, not elsewhere.
    [
      '--output is the input named through a symlinked folder and ..',
      async (f: string, input: string) => (
        await mkdir(join(f, 'elsewhere')),
        await symlink(join(f, 'sub'), join(f, 'elsewhere', 'lnk')),
        ['--input', input, '--output', `${f}/elsewhere/lnk/../in.csv`]
      ),
    ],
    [
      '--report is --output named through a symlinked folder and ..',
      async (f: string, input: string) => (
        await mkdir(join(f, 'elsewhere')),
        await symlink(join(f, 'sub'), join(f, 'elsewhere', 'lnk')),
        ['--input', input, '--output', join(f, 'out.csv'), '--report', `${f}/elsewhere/lnk/../out.csv`]
      ),
    ],
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

  it.each(['--output', '--rejects', '--report'])(
    'refuses with exit 2 a %s ending in / that names no folder, instead of writing a file of that name',
    async (flag) => {
      const { folder, input } = await caseDir(`slash${flag}`);
      const args = ['--input', input, '--output', join(folder, 'out.csv')];
      if (flag === '--output') args[3] = `${folder}/not-there/`;
      else args.push(flag, `${folder}/not-there/`);
      const run = await runCli(['validate', ...args, ...MAP, '--store', 'off'], env());
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`ends in "/", so it names a folder, and there is no folder ${join(folder, 'not-there')}`);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(await readdir(folder)).toEqual(['in.csv']); // no file `not-there`, no rejects file beside it
    },
  );

  it('refuses with exit 2 a --report under a file, saying it is a file, not that it does not exist', async () => {
    const { folder, input } = await caseDir('report-under-file');
    const run = await runCli(['validate', '--input', input, '--output', join(folder, 'out.csv'), '--report', join(input, 'r.html'), ...MAP], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${input} is a file, not a folder`);
    expect(await readdir(folder)).toEqual(['in.csv']);
  });

  it('writes an --output through a symlinked folder and .. where the file system puts it, and refuses a .. out of a missing folder', async () => {
    const { folder, input } = await caseDir('dot-dot');
    await mkdir(join(folder, 'data', 'deep'), { recursive: true });
    await symlink(join(folder, 'data', 'deep'), join(folder, 'lnk'));
    // Run in the case folder, the output named relative to it as a script would.
    const runIn = (args: string[]) =>
      completed(spawn(process.execPath, [CLI, 'validate', ...args, ...MAP, '--store', 'off'], { cwd: folder, env: { ...process.env, ...env() } }));
    const run = await runIn(['--input', input, '--output', 'lnk/../out.csv']);
    expect(run.code, run.stderr).toBe(0);
    // Where `cat lnk/../out.csv` reads it: data/out.csv, next to the link's target.
    expect(summaryOf(run)['output']).toBe(join(folder, 'data', 'out.csv'));
    expect((await readCsv(join(folder, 'data', 'out.csv'), { delimiter: ';' })).rows).toHaveLength(200);
    expect(await readdir(folder)).not.toContain('out.csv');

    const missing = await runIn(['--input', input, '--output', 'not-there/../out2.csv']);
    expect(missing.code, missing.stderr).toBe(2);
    expect(missing.stderr).toContain(`the folder ${join(folder, 'not-there')}, which does not exist`);
    expect(missing.stderr).not.toMatch(/\n\s+at /);
    expect(await readdir(folder)).not.toContain('out2.csv');
  });

  it("refuses with exit 2 an --output, --rejects or --report that is the result store's file, and the stored answers stay", async () => {
    const { folder, input } = await caseDir('store-file');
    const store = join(folder, 'store');
    const first = await runCli(['validate', '--input', input, '--output', join(folder, 'first.csv'), ...MAP, '--store', store], env());
    expect(first.code, first.stderr).toBe(0);
    const calls = sandbox.stats().billable['a'] ?? 0;
    const before = await readFile(join(store, 'results.mdb'));
    for (const [flag, file] of [
      ['--output', 'results.mdb'],
      ['--rejects', 'results.mdb'],
      ['--report', 'results.mdb'],
      ['--output', 'results.mdb-lock'],
    ] as const) {
      const args = ['validate', '--input', input, '--output', join(folder, 'out.csv'), ...MAP, '--store', store];
      const at = flag === '--output' ? args.indexOf('--output') + 1 : args.push(flag, '') - 1;
      args[at] = join(folder, 'link-to-store', file);
      await rm(join(folder, 'link-to-store'), { force: true });
      await symlink(store, join(folder, 'link-to-store')); // the store's file under another spelling
      const run = await runCli(args, env());
      expect(run.code, `${flag} ${file}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain(`is the result store's file ${join(store, file)}`);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    expect((await readFile(join(store, 'results.mdb'))).equals(before)).toBe(true);
    // The answers are still there: a rerun to a new output pays nothing.
    const again = await runCli(['validate', '--input', input, '--output', join(folder, 'again.csv'), ...MAP, '--store', store], env());
    expect(again.code, again.stderr).toBe(0);
    expect(sandbox.stats().billable['a'] ?? 0).toBe(calls);
  });

  it("refuses with exit 2, before any call, a --report that is another result store's file (not the run's own store)", async () => {
    const { folder, input } = await caseDir('other-store-file');
    const other = join(folder, 'other-store');
    const first = await runCli(['validate', '--input', input, '--output', join(folder, 'first.csv'), ...MAP, '--store', other], env());
    expect(first.code, first.stderr).toBe(0);
    const calls = sandbox.stats().billable['a'] ?? 0;
    const before = await readFile(join(other, 'results.mdb'));
    const run = await runCli(
      ['validate', '--input', input, '--output', join(folder, 'out.csv'), ...MAP, '--store', 'off', '--report', join(other, 'results.mdb')],
      env(),
    );
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${join(other, 'results.mdb')} is a file of a result store's database`);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(sandbox.stats().billable['a'] ?? 0).toBe(calls);
    expect((await readFile(join(other, 'results.mdb'))).equals(before)).toBe(true);
  });

  it.runIf(process.getuid?.() === 0)(
    'writes a --report to a device in place: the device stays a device (as root, /dev/null would be replaced by a file)',
    async () => {
      const { folder, input } = await caseDir('report-device');
      const nullDevice = join(folder, 'null');
      execFileSync('mknod', [nullDevice, 'c', '1', '3']);
      const run = await runCli(['validate', '--input', input, '--output', join(folder, 'out.csv'), ...MAP, '--store', 'off', '--report', nullDevice], env());
      expect(run.code, run.stderr).toBe(0);
      expect((await lstat(nullDevice)).isCharacterDevice()).toBe(true);
    },
  );

  it('refuses with exit 2 an --output or --rejects that is a device (/dev/null), creating nothing next to it', async () => {
    const { folder, input } = await caseDir('device');
    const sideFiles = async () => (await readdir('/dev')).filter((f) => f.startsWith('null.') || f.startsWith('null-'));
    const before = await sideFiles();
    for (const args of [
      ['--output', '/dev/null', '--rejects', join(folder, 'r.csv')],
      ['--output', join(folder, 'out.csv'), '--rejects', '/dev/null'],
      ['--output', '/dev/null'],
    ]) {
      const run = await runCli(['validate', '--input', input, ...args, ...MAP, '--store', 'off'], env());
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/\/dev\/null is not a file \(a device\)/);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await sideFiles()).toEqual(before);
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

/** Runs the CLI with `args` on the steady sandbox and kills it (kill -9) once `output`'s checkpoint holds 100 records. */
/** `dq-csv validate --resume` of `input` into `output`, in batches of 50 (a run killed after its first checkpoint is resumed with them). */
function resumeArgs(input: string, output: string): string[] {
  return ['validate', '--input', input, '--output', output, ...MAP, '--batch-size', '50', '--concurrency', '8', '--rate-limit', '0', '--resume'];
}

async function killedAfterCheckpoint(output: string, args: string[]): Promise<void> {
  const child = startCli([...args, '--store', 'off'], env(steady));
  const run = completed(child);
  await checkpointPast(output, 100, run, 2);
  child.kill('SIGKILL');
  await run;
  expect(await checkpointRecords(output), 'the run was killed before its end').toBeLessThan(1000);
}

/** Resolves once `path` exists (the first run took its lock); throws after 30 s. */
async function appears(path: string): Promise<void> {
  for (let i = 0; !(await stat(path).catch(() => undefined)); i++) {
    if (i > 600) throw new Error(`${path} never appeared`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('two runs on one output under two names', () => {
  // How the second run names the file the first one writes as <folder>/out.csv. `before`: made
  // before the first run starts; `during`: made while it runs (a hard link needs the file).
  const spellings: [string, { before?: (f: string) => Promise<string>; during?: (f: string) => Promise<string> }][] = [
    ['a symlink to it', { before: async (f) => (await symlink(join(f, 'out.csv'), join(f, 'link.csv')), join(f, 'link.csv')) }],
    [
      'a relative symlink to it, in another folder',
      { before: async (f) => (await mkdir(join(f, 'other')), await symlink('../out.csv', join(f, 'other', 'rel.csv')), join(f, 'other', 'rel.csv')) },
    ],
    [
      'its folder through a symlink',
      { before: async (f) => (await symlink(f, join(dir, `${basename(f)}-alias`)), join(dir, `${basename(f)}-alias`, 'out.csv')) },
    ],
    ['a path through ..', { before: async (f) => (await mkdir(join(f, 'sub')), `${f}/sub/../out.csv`) }],
    [
      'a hard link to it, the output there before the run',
      {
        before: async (f) => (await writeFile(join(f, 'out.csv'), 'an old output\n'), await link(join(f, 'out.csv'), join(f, 'hard.csv')), join(f, 'hard.csv')),
      },
    ],
    [
      'a hard link to it, in another folder, made while the run writes it',
      {
        during: async (f) => (
          await mkdir(join(f, 'elsewhere')),
          await link(join(f, 'out.csv'), join(f, 'elsewhere', 'hard.csv')),
          join(f, 'elsewhere', 'hard.csv')
        ),
      },
    ],
  ];

  it.each(spellings)("refuses the second with exit 75 naming the first one's pid when its --output is %s", async (name, make) => {
    const { folder, input } = await caseDir(`two-names-${name.replace(/\W+/g, '-')}`, 400);
    const output = join(folder, 'out.csv');
    const other = make.before ? await make.before(folder) : undefined;
    const args = (out: string) => ['validate', '--input', input, '--output', out, ...MAP, '--batch-size', '50', '--concurrency', '1'];
    const first = startCli(args(output), env(slow));
    const exited = new Promise<number | null>((resolve) => first.on('exit', (code) => resolve(code)));
    try {
      await appears(`${output}.lock`);
      await appears(`${output}.checkpoint.json`); // the output is there and locked by device and inode
      const second = await runCli(args(other ?? (await make.during!(folder))), env());
      expect(second.code, second.stderr).toBe(75);
      expect(second.stderr).toMatch(/^dq-csv: output-locked: another dq-csv run is writing /);
      expect(second.stderr).toContain(`pid ${first.pid}`);
      expect(second.stderr).not.toMatch(/\n\s+at /);
      expect(first.exitCode, 'the first run was still running').toBe(null);
    } finally {
      first.kill('SIGKILL');
    }
    await exited;
    // Nothing of the second run is left: only the first run's files (and the links made).
    const left = (await readdir(folder)).filter((n) => !['in.csv', 'link.csv', 'hard.csv', 'other', 'sub', 'elsewhere'].includes(n)).sort();
    expect(left).toEqual(['out.csv', 'out.csv.checkpoint.json', 'out.csv.lock', 'out.rejects.csv', 'out.rejects.csv.lock']);
  });

  it.each(spellings.filter(([name]) => !name.includes('hard link')))(
    'resumes the killed run when --resume names the output through %s, and finishes every row',
    async (name, make) => {
      const { folder, input } = await caseDir(`resume-names-${name.replace(/\W+/g, '-')}`, 1000);
      const output = join(folder, 'out.csv');
      const other = await make.before!(folder);
      const args = (out: string) => resumeArgs(input, out);
      await killedAfterCheckpoint(output, args(output));
      const resumed = await runCli(args(other), env());
      expect(resumed.code, resumed.stderr).toBe(0);
      const summary = summaryOf(resumed);
      expect(summary).toMatchObject({ resumed: true, runs: 2, output });
      expect(summary.rows + summary.rejects).toBe(1000);
      const { rows } = await readCsv(output, { delimiter: ';' });
      expect(rows.map((r) => r[0])).toEqual((await readCsv(input, { delimiter: ';' })).rows.map((r) => r[0]));
      expect((await readdir(folder)).filter((n) => n.startsWith('out.csv.') || n.endsWith('.checkpoint.json'))).toEqual([]);
    },
  );

  it('resumes through a symlink from the checkpoint an older dq-csv left next to the symlink, with the rejects file it wrote there', async () => {
    const { folder, input } = await caseDir('resume-older-symlink', 1000);
    const output = join(folder, 'out.csv');
    const link = join(folder, 'link.csv');
    await symlink(output, link);
    const args = (out: string) => resumeArgs(input, out);
    await killedAfterCheckpoint(output, args(output));
    // What an older dq-csv left for --output link.csv: its side files named after the symlink,
    // the paths as given in the checkpoint, no content samples.
    const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as { options: Record<string, unknown>; input?: unknown };
    checkpoint.options['output'] = link;
    checkpoint.options['rejects'] = join(folder, 'link.rejects.csv');
    delete checkpoint.input;
    await writeFile(`${link}.checkpoint.json`, JSON.stringify(checkpoint) + '\n');
    await rm(`${output}.checkpoint.json`);
    await rename(join(folder, 'out.rejects.csv'), join(folder, 'link.rejects.csv'));
    const resumed = await runCli(args(link), env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ resumed: true, runs: 2, output, rejectsFile: join(folder, 'link.rejects.csv') });
    expect(summaryOf(resumed).rows + summaryOf(resumed).rejects).toBe(1000);
    const { rows } = await readCsv(output, { delimiter: ';' });
    expect(rows.map((r) => r[0])).toEqual((await readCsv(input, { delimiter: ';' })).rows.map((r) => r[0]));
    expect((await readdir(folder)).filter((n) => n.includes('checkpoint'))).toEqual([]);
  });

  it("refuses a resume through a hard link, naming the killed run's name and checkpoint; that name resumes it", async () => {
    const { folder, input } = await caseDir('resume-hard-link', 1000);
    const output = join(folder, 'out.csv');
    const hard = join(folder, 'hard.csv');
    const args = (out: string, ...more: string[]) => [
      'validate',
      '--input',
      input,
      '--output',
      out,
      ...MAP,
      '--batch-size',
      '50',
      '--concurrency',
      '8',
      '--rate-limit',
      '0',
      ...more,
    ];
    await killedAfterCheckpoint(output, args(output));
    await link(output, hard);
    const written = await readFile(output);
    for (const more of [['--resume'], []]) {
      const refused = await runCli(args(hard, ...more), env());
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(`the output ${hard} is also named ${output} (a hard link: the same file)`);
      expect(refused.stderr).toContain(`rerun with --output ${output} --resume to continue it`);
      expect(refused.stderr).toContain(`delete ${output}.checkpoint.json to start over`);
      expect(await readFile(output)).toEqual(written);
    }
    const resumed = await runCli(args(output, '--resume'), env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed).rows + summaryOf(resumed).rejects).toBe(1000);
  });

  it("refuses a second run whose --rejects is a symlink to the first one's, though their outputs differ", async () => {
    const { folder, input } = await caseDir('rejects-two-names', 400);
    const rejects = join(folder, 'bad-rows.csv');
    await symlink(rejects, join(folder, 'bad-link.csv'));
    const args = (output: string, r: string) => [
      'validate',
      '--input',
      input,
      '--output',
      join(folder, output),
      '--rejects',
      r,
      ...MAP,
      '--batch-size',
      '50',
      '--concurrency',
      '1',
    ];
    const first = startCli(args('a.csv', rejects), env(slow));
    const exited = new Promise<number | null>((resolve) => first.on('exit', (code) => resolve(code)));
    try {
      await appears(join(folder, 'a.csv.checkpoint.json'));
      const second = await runCli(args('b.csv', join(folder, 'bad-link.csv')), env());
      expect(second.code, second.stderr).toBe(75);
      expect(second.stderr).toContain(
        `another dq-csv run is writing ${rejects}, the file --rejects ${join(folder, 'bad-link.csv')} leads to (pid ${first.pid}`,
      );
      expect(first.exitCode, 'the first run was still running').toBe(null);
    } finally {
      first.kill('SIGKILL');
    }
    await exited;
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
    const full = await runCliWithFileSizeLimit(40000, args, env());
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
    const { folder, input, content } = await caseDir('output-full-at-once', 10);
    // A header far longer than the locks the run writes first (its owner, host, start and path).
    const [header, ...rows] = content.trimEnd().split('\n');
    await writeFile(input, [`${header};${'bemerkung_'.repeat(100)}`, ...rows.map((r) => `${r};`)].join('\n') + '\n');
    const output = join(folder, 'out.csv');
    const args = ['validate', '--input', input, '--output', output, ...MAP, '--store', 'off'];
    const full = await runCliWithFileSizeLimit(600, args, env());
    expect(full.code, full.stderr).toBe(1);
    expect(full.stderr).toContain(`dq-csv: output-io: cannot write the output ${output}`);
    expect(full.stderr).toContain('no input record is written yet');
    expect(full.stderr).not.toMatch(/\n\s+at /);
    expect(summaryOf(full)).toMatchObject({ outcome: 'stopped', exitCode: 1, error: { code: 'output-io' } });
  });
});

describe('a lock that cannot be written', () => {
  it('exits 2 (output-unwritable) naming the folder and the file-size limit, leaving nothing in the folder', async () => {
    const { folder, input } = await caseDir('lock-fsize', 10);
    const output = join(folder, 'out.csv');
    const args = ['validate', '--input', input, '--output', output, ...MAP, '--store', 'off'];
    // The lock's owner (pid, host, time) is written to a temporary file first: 10 bytes do not hold it.
    const run = await runCliWithFileSizeLimit(10, args, env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`dq-csv: output-unwritable: cannot create the lock ${output}.lock in the folder ${folder}: `);
    expect(run.stderr).toContain('EFBIG');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(await readdir(folder)).toEqual(['in.csv']);
    // With room, the same run goes through.
    const roomy = await runCli(args, env());
    expect(roomy.code, roomy.stderr).toBe(0);
  });

  it('exits 2 naming the folder of the locks by device and inode when TMPDIR cannot hold them, before writing anything', async () => {
    const { folder, input } = await caseDir('lock-tmpdir', 10);
    const missing = join(folder, 'no-such-tmp');
    const run = await runCli(['validate', '--input', input, '--output', join(folder, 'out.csv'), ...MAP, '--store', 'off'], { ...env(), TMPDIR: missing });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`dq-csv: output-unwritable: cannot create the lock ${missing}/dq-csv-locks-`);
    expect(run.stderr).toContain('set TMPDIR to a folder it may write');
    expect(await readdir(folder)).toEqual(['in.csv']);
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
