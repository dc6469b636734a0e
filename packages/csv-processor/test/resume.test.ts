import { execFileSync } from 'node:child_process';
import { appendFile, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv, startSandbox } from '@dq/sandbox';
import {
  batchCalls,
  billable,
  checkpointPast,
  checkpointRecords,
  comparable,
  completed,
  runCli,
  sampleArgs,
  startCli,
  summaryOf,
  unlimited,
  useSandbox,
  useTempDir,
} from './helpers.js';

const ROWS = 3000;
const BATCH = 100;
const dir = useTempDir();
const input = join(dir, 'in.csv');
// A little latency per call so that a run lasts long enough to be killed at chosen points.
const sandbox = useSandbox(unlimited({ faults: { batch: { latencyMs: 3 } } }));

beforeAll(async () => {
  await writeFile(input, makeSampleCsv(ROWS, 11));
});

const env = () => sandbox.env();
const args = (output: string, ...more: string[]) =>
  sampleArgs(input, output, '--batch-size', String(BATCH), '--concurrency', '8', '--rate-limit', '0', ...more);

/** Starts the CLI and kills it with SIGKILL once its checkpoint says `atRecords` were consumed. */
async function killWhenPast(output: string, atRecords: number): Promise<number> {
  const child = startCli(args(output, '--resume'), env());
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (;;) {
    const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(r, 5)).then(() => false)]);
    if (done) throw new Error('the run finished before the kill point');
    const records = await checkpointRecords(output);
    if (records >= atRecords) {
      child.kill('SIGKILL');
      await exited;
      return records;
    }
  }
}

describe('resuming after kill -9', () => {
  it('produces the uninterrupted output after kills at three points, paying at most one batch again per kill', async () => {
    sandbox.resetStats();
    // Without a store: the killed runs below start from an empty one (the test's own).
    const straight = await runCli(args(join(dir, 'straight.csv'), '--store', 'off'), env());
    expect(straight.code, straight.stderr).toBe(0);
    const straightCalls = batchCalls(sandbox.stats());
    expect(straightCalls).toBeGreaterThan(0);

    sandbox.resetStats();
    const output = join(dir, 'killed.csv');
    const killedAt: number[] = [];
    for (const point of [300, 1400, 2600]) killedAt.push(await killWhenPast(output, point));
    expect(killedAt[2]).toBeLessThan(ROWS);
    const last = await runCli(args(output, '--resume'), env());
    expect(last.code, last.stderr).toBe(0);
    const summary = summaryOf(last);
    expect(summary.resumed).toBe(true);
    expect(summary.runs).toBe(4);
    expect(summary.rows + summary.rejects).toBe(ROWS);

    expect(await comparable(output)).toEqual(await comparable(join(dir, 'straight.csv')));
    expect(batchCalls(sandbox.stats())).toBeLessThanOrEqual(straightCalls + 3 * BATCH);
    await expect(stat(`${output}.checkpoint.json`)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses to resume with different options, naming them', async () => {
    const output = join(dir, 'mismatch.csv');
    await killWhenPast(output, 200);
    const run = await runCli([...args(output, '--resume'), '--include', 'coordinates-wgs84'], env());
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('dq-csv: resume-mismatch: cannot resume: --include is not as in the interrupted run; rerun with its options');
  });

  it("refuses to resume against another platform (the sandbox's answers would precede the platform's in one output); the same platform on another port resumes", async () => {
    const output = join(dir, 'other-platform.csv');
    await killWhenPast(output, 200);
    const elsewhere = { ...env(), DQ_BASE_URL: env()['DQ_BASE_URL']!.replace('127.0.0.1', 'localhost') };
    const refused = await runCli(args(output, '--resume'), elsewhere);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('dq-csv: resume-mismatch: cannot resume: --base-url is not as in the interrupted run; rerun with its options');
    // The same sandbox process reached on another port (a second one, equally configured).
    const again = await startSandbox({ port: 0, config: unlimited() });
    try {
      const resumed = await runCli(args(output, '--resume'), { ...env(), DQ_BASE_URL: again.url });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ outcome: 'done', rows: ROWS });
    } finally {
      await again.close();
    }
  });

  it.each(['output', 'rejects file'])('refuses to resume when the %s of the killed run is gone, saying how to start over', async (which) => {
    const output = join(dir, `gone-${which.replace(/\W/g, '')}.csv`);
    await killWhenPast(output, 200);
    const gone = which === 'output' ? output : output.replace(/\.csv$/, '.rejects.csv');
    await rm(gone);
    const run = await runCli(args(output, '--resume'), env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`dq-csv: resume-mismatch: the ${which} ${gone} of the interrupted run is gone`);
    expect(run.stderr).toContain(`delete ${output}.checkpoint.json`);
  });

  it('refuses to resume over an input changed since the kill, saying so rather than naming options', async () => {
    const changing = join(dir, 'changing.csv');
    await writeFile(changing, makeSampleCsv(ROWS, 12));
    const output = join(dir, 'changed-input.csv');
    const flags = ['--batch-size', String(BATCH), '--concurrency', '8', '--rate-limit', '0', '--resume'];
    const child = startCli(sampleArgs(changing, output, ...flags), env());
    const run = completed(child);
    await checkpointPast(output, 200, run);
    child.kill('SIGKILL');
    await run;
    await appendFile(changing, 'K999999;Neu GmbH;Hauptstraße 5;10115;Berlin;DE;;2024-01-01\n');
    const resumed = await runCli(sampleArgs(changing, output, ...flags), env());
    expect(resumed.code, resumed.stderr).toBe(2);
    expect(resumed.stderr).toContain(`dq-csv: resume-mismatch: the input ${changing} was changed since the interrupted run`);
    expect(resumed.stderr).not.toContain('rerun with the same options');
    expect(resumed.stderr).toContain(`delete ${output}.checkpoint.json`);
  });

  it('an input still being written while it is read (appended to, its last line cut short) is no finished run: exit 75 naming the change, the checkpoint kept; once complete, a rerun pays only for the new records', async () => {
    const growing = join(dir, 'growing.csv');
    await writeFile(growing, makeSampleCsv(ROWS, 13));
    const output = join(dir, 'growing.out.csv');
    const store = join(dir, 'growing-store');
    const flags = ['--batch-size', String(BATCH), '--concurrency', '8', '--rate-limit', '0', '--store', store];
    const child = startCli(sampleArgs(growing, output, ...flags), env());
    const run = completed(child);
    await checkpointPast(output, 200, run);
    // The writer adds 20 whole records and is in the middle of a 21st when the run reaches the end.
    const added = Array.from({ length: 20 }, (_, i) => `K9${String(i).padStart(5, '0')};Neu ${i} GmbH;Hauptstraße ${i + 1};10115;Berlin;DE;;2024-01-01\n`).join(
      '',
    );
    await appendFile(growing, `${added}K999999;Letzte GmbH;Hauptstraße 99;10115;Ber`);
    const first = await run;
    expect(first.code, first.stderr).toBe(75);
    expect(summaryOf(first)).toMatchObject({ outcome: 'stopped', exitCode: 75, error: { code: 'input-changed' } });
    expect(first.stderr).toMatch(
      new RegExp(
        `^dq-csv: input-changed: the input ${growing} changed while it was read \\(\\d+ bytes, modified \\S+ when the run began; now \\d+ bytes, modified \\S+\\): something was still writing it, .*delete ${output}.checkpoint.json and rerun without --resume \\(answers already paid for are not bought again\\); input records 1-\\d+ are written and checkpointed$`,
        'm',
      ),
    );
    await stat(`${output}.checkpoint.json`);

    await appendFile(growing, 'lin;DE;;2024-01-01\n');
    await rm(`${output}.checkpoint.json`);
    const paidBefore = billable(sandbox);
    const rerun = await runCli(sampleArgs(growing, output, ...flags), env());
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(summaryOf(rerun)).toMatchObject({ outcome: 'done', rows: ROWS + 21, rejects: 0 });
    expect(billable(sandbox) - paidBefore).toBeLessThanOrEqual(21);
  });

  it('stops on SIGTERM with exit 75 and the code interrupted, and --resume finishes every row', async () => {
    const output = join(dir, 'terminated.csv');
    const child = startCli(args(output, '--resume'), env());
    const run = completed(child);
    await checkpointPast(output, 200, run);
    child.kill('SIGTERM');
    const stopped = await run;
    expect(stopped.code, stopped.stderr).toBe(75);
    expect(summaryOf(stopped).error).toMatchObject({ code: 'interrupted' });
    expect(stopped.stderr).toMatch(/dq-csv: interrupted: interrupted by SIGTERM; input records 1-\d+ are written and checkpointed; rerun with --resume/);
    expect(stopped.stderr).not.toContain('unexpected');
    const resumed = await runCli(args(output, '--resume'), env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed).rows + summaryOf(resumed).rejects).toBe(ROWS);
  });

  it('refuses to start over a checkpoint without --resume', async () => {
    const output = join(dir, 'no-resume.csv');
    await killWhenPast(output, 200);
    const run = await runCli(args(output), env());
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('checkpoint-exists');
    expect(run.stderr).toContain('--resume');
  });
});

describe('resuming over an input of the same size and modification time', () => {
  // 800 rows of ~380 bytes (a wide note column): ~300 KB, so the three 64 KiB windows a
  // checkpoint samples (start, before its offset, end) lie apart, and a run is short.
  const WIDE_ROWS = 800;
  const wideCsv = (seed: number) =>
    makeSampleCsv(WIDE_ROWS, seed)
      .split('\n')
      .map((line, i) => (line === '' ? line : `${line};${i === 0 ? 'notiz' : 'n'.repeat(300)}`))
      .join('\n');

  /** Starts the CLI on `file` and kills it (kill -9) once its checkpoint holds `atRecords`; returns the checkpoint. */
  async function killedAt(file: string, output: string, atRecords: number, ...more: string[]) {
    const child = startCli(sampleArgs(file, output, '--batch-size', String(BATCH), '--concurrency', '8', '--rate-limit', '0', '--resume', ...more), env());
    const run = completed(child);
    await checkpointPast(output, atRecords, run, 2);
    child.kill('SIGKILL');
    await run;
    const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as { position: { records: number; offset: number } };
    expect(checkpoint.position.records, 'the run was killed before its end').toBeLessThan(WIDE_ROWS);
    return checkpoint;
  }

  /** Changes one digit at or after byte `at` (the size stays the same). */
  function changeDigit(bytes: Buffer, at: number): void {
    let i = at;
    while (bytes[i]! < 0x30 || bytes[i]! > 0x39) i++;
    bytes[i] = bytes[i] === 0x39 ? 0x30 : bytes[i]! + 1;
  }

  // Where the copy differs: 64 KiB windows at the start, before the checkpoint's offset, at the end.
  it.each([
    [
      'just before where the run stopped',
      'touch -r',
      (size: number, offset: number) => offset - 2000,
      'the 64 KiB before the point the interrupted run stopped at',
    ],
    ['in its first 64 KiB (another file copied over it with cp -p)', 'cp -p', () => 3000, 'its first 64 KiB (bytes 0-65535)'],
    ['in its last 64 KiB', 'touch -r', (size: number) => size - 2000, 'its last 64 KiB'],
  ])('refuses when the input changed %s, saying what changed and what to do', async (name, how, where, what) => {
    const file = join(dir, `same-size-${name.replace(/\W+/g, '-')}.csv`);
    await writeFile(file, wideCsv(21));
    const output = join(dir, `same-size-${name.replace(/\W+/g, '-')}.out.csv`);
    const { position } = await killedAt(file, output, 500, '--store', 'off');
    expect(position.offset).toBeGreaterThan(2 * 65536);
    const before = await stat(file);
    // A copy keeping the original's modification time to the nanosecond, for touch -r.
    const original = `${file}.original`;
    execFileSync('cp', ['-p', file, original]);
    const edited = await readFile(file);
    changeDigit(edited, where(edited.length, position.offset));
    if (how === 'cp -p') {
      // Another file (the edited copy) with the original's time, copied over the input with its time.
      const other = `${file}.other`;
      await writeFile(other, edited);
      execFileSync('touch', ['-r', original, other]);
      execFileSync('cp', ['-p', other, file]);
    } else {
      await writeFile(file, edited);
      execFileSync('touch', ['-r', original, file]);
    }
    const now = await stat(file);
    expect({ size: now.size, mtimeMs: now.mtimeMs }).toEqual({ size: before.size, mtimeMs: before.mtimeMs });
    const written = await readFile(output);
    const resumed = await runCli(
      sampleArgs(file, output, '--batch-size', String(BATCH), '--concurrency', '8', '--rate-limit', '0', '--resume', '--store', 'off'),
      env(),
    );
    expect(resumed.code, resumed.stderr).toBe(2);
    expect(resumed.stderr).toContain(
      `dq-csv: resume-mismatch: the input ${file} was changed since the interrupted run, though its size and modification time are as they were (${before.size} bytes, modified ${before.mtime.toISOString()}`,
    );
    expect(resumed.stderr).toContain(what);
    expect(resumed.stderr).toContain('resuming would mix its two versions; put back the input the run started with and rerun with --resume');
    expect(resumed.stderr).toContain(`delete ${output}.checkpoint.json and rerun without --resume`);
    expect(resumed.stderr).not.toMatch(/\n\s+at /);
    expect(await readFile(output)).toEqual(written);
  });

  it.each([
    ['the input unchanged', false],
    ['a checkpoint of an older dq-csv (no content samples, no platform among its options), the input unchanged', true],
  ])('resumes with %s, and the output is byte for byte that of a run never killed', async (name, older) => {
    const file = join(dir, `unchanged-${older}.csv`);
    await writeFile(file, wideCsv(22));
    const output = join(dir, `unchanged-${older}.out.csv`);
    // One store for all three runs: the run never killed (last) gets every answer, request id and
    // check time from it, as the resumed one did.
    const store = join(dir, `unchanged-${older}-store`);
    await killedAt(file, output, 400, '--store', store);
    if (older) {
      const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as Record<string, unknown>;
      expect(checkpoint['input']).toMatchObject({ algorithm: 'sha256', window: 65536 });
      delete checkpoint['input'];
      const options = checkpoint['options'] as Record<string, unknown>;
      expect(options['platform']).toBe('127.0.0.1');
      delete options['platform'];
      await writeFile(`${output}.checkpoint.json`, JSON.stringify(checkpoint) + '\n');
    }
    // An identical copy put in its place (cp -p: same content, size and time, another inode) is the same input.
    execFileSync('cp', ['-p', file, `${file}.copy`]);
    execFileSync('mv', [`${file}.copy`, file]);
    const resumed = await runCli(
      sampleArgs(file, output, '--batch-size', String(BATCH), '--concurrency', '8', '--rate-limit', '0', '--resume', '--store', store),
      env(),
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ resumed: true, runs: 2 });
    const straight = join(dir, `unchanged-${older}.straight.csv`);
    const clean = await runCli(sampleArgs(file, straight, '--batch-size', String(BATCH), '--store', store), env());
    expect(clean.code, clean.stderr).toBe(0);
    expect((await readFile(output)).equals(await readFile(straight))).toBe(true);
    expect((await readFile(output.replace(/\.csv$/, '.rejects.csv'))).equals(await readFile(straight.replace(/\.csv$/, '.rejects.csv')))).toBe(true);
  });
});
