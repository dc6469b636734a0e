import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import {
  billable,
  checkpointPast,
  CLI,
  comparable,
  completed,
  readCsv,
  runCli,
  sampleArgs,
  startCli,
  summaryOf,
  unlimited,
  useSandbox,
  useTempDir,
} from './helpers.js';

// The files of a run changed by another process while it runs (logrotate, a cleanup job, an
// export still being written), and a run stopped before it wrote its first checkpoint.

const ROWS = 3000;
const dir = useTempDir();
const input = join(dir, 'in.csv');
// A little latency per call: a run lasts long enough for its files to be changed under it.
const sandbox = useSandbox(unlimited({ faults: { batch: { latencyMs: 5 } } }));

const flags = (store: string) => ['--batch-size', '100', '--concurrency', '8', '--rate-limit', '0', '--store', store];
/** An uninterrupted run's output, and the calls it bought. */
const straight = join(dir, 'straight.csv');
let straightCalls = 0;

beforeAll(async () => {
  await writeFile(input, makeSampleCsv(ROWS, 21));
  const done = await runCli(sampleArgs(input, straight, ...flags(join(dir, 'straight-store'))), sandbox.env());
  expect(done.code, done.stderr).toBe(0);
  straightCalls = summaryOf(done).apiCalls as number;
});

/** A folder of its own for one case, with its output path and result store. */
async function caseOf(name: string): Promise<{ folder: string; output: string; rejects: string; store: string }> {
  const folder = join(dir, name);
  await mkdir(folder);
  return { folder, output: join(folder, 'out.csv'), rejects: join(folder, 'out.rejects.csv'), store: join(folder, 'store') };
}

/** Starts a run and, once its checkpoint holds 300 records, does `change` to its files; returns how the run ended. */
async function changedMidRun(output: string, store: string, change: () => Promise<void>) {
  const child = startCli(sampleArgs(input, output, ...flags(store)), sandbox.env());
  const run = completed(child);
  await checkpointPast(output, 300, run);
  await change();
  return run;
}

describe('an output or rejects file another process takes away or changes mid-run', () => {
  it('renamed away (logrotate): exit 2 naming the output, the checkpoint kept; put back, --resume finishes it as an uninterrupted run, paying nothing twice', async () => {
    const { output, store } = await caseOf('rotated');
    const paidBefore = billable(sandbox);
    const stopped = await changedMidRun(output, store, () => rename(output, `${output}.1`));
    expect(stopped.code, stopped.stderr).toBe(2);
    expect(stopped.stderr).toMatch(
      new RegExp(
        `^dq-csv: output-changed: the output ${output} was deleted or renamed while the run wrote it \\(logrotate or a cleanup job\\?\\): .*put back the file the run wrote under that name, as it was, and rerun with --resume; or delete ${output}.checkpoint.json and rerun without --resume.*; input records 1-\\d+ are written and checkpointed$`,
        'm',
      ),
    );
    expect(stopped.stderr).not.toMatch(/\n\s+at /);
    expect(summaryOf(stopped)).toMatchObject({ outcome: 'stopped', exitCode: 2, checkpoint: `${output}.checkpoint.json`, error: { code: 'output-changed' } });
    // The run wrote nothing more once the file was gone: the checkpoint counts what the moved file holds.
    const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as { sink: { outputBytes: number } };
    expect((await stat(`${output}.1`)).size).toBe(checkpoint.sink.outputBytes);
    await expect(stat(output)).rejects.toMatchObject({ code: 'ENOENT' });

    await rename(`${output}.1`, output);
    const resumed = await runCli(sampleArgs(input, output, ...flags(store), '--resume'), sandbox.env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ outcome: 'done', rows: ROWS, rejects: 0, runs: 2 });
    expect(await comparable(output)).toEqual(await comparable(straight));
    // Both runs together bought no more than the uninterrupted run: nothing was paid twice.
    expect(billable(sandbox) - paidBefore).toBeLessThanOrEqual(straightCalls);
  });

  it('deleted: exit 2 rather than a done run whose rows are in no file; --resume refuses; a rerun from the start pays nothing again', async () => {
    const { output, store } = await caseOf('deleted');
    const paidBefore = billable(sandbox);
    const stopped = await changedMidRun(output, store, () => rm(output));
    expect(stopped.code, stopped.stderr).toBe(2);
    expect(stopped.stderr).toContain(`dq-csv: output-changed: the output ${output} was deleted or renamed while the run wrote it`);
    expect(summaryOf(stopped)).toMatchObject({ outcome: 'stopped', error: { code: 'output-changed' } });
    await expect(stat(output)).rejects.toMatchObject({ code: 'ENOENT' });

    const resumed = await runCli(sampleArgs(input, output, ...flags(store), '--resume'), sandbox.env());
    expect(resumed.code, resumed.stderr).toBe(2);
    expect(resumed.stderr).toContain(`dq-csv: resume-mismatch: the output ${output} of the interrupted run is gone`);

    await rm(`${output}.checkpoint.json`);
    const rerun = await runCli(sampleArgs(input, output, ...flags(store)), sandbox.env());
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(summaryOf(rerun)).toMatchObject({ outcome: 'done', rows: ROWS });
    expect(await comparable(output)).toEqual(await comparable(straight));
    // The answers the stopped run bought came from the store: both runs bought no more than one.
    expect(summaryOf(rerun).callsSavedByStore).toBeGreaterThan(0);
    expect(billable(sandbox) - paidBefore).toBeLessThanOrEqual(straightCalls);
  });

  it('cut to nothing while a copy is taken (logrotate copytruncate): exit 2 naming the lengths, no NUL bytes written into it; the copy put back resumes', async () => {
    const { output, store } = await caseOf('copytruncate');
    const stopped = await changedMidRun(output, store, async () => {
      await copyFile(output, `${output}.1`);
      await truncate(output, 0);
    });
    expect(stopped.code, stopped.stderr).toBe(2);
    expect(stopped.stderr).toMatch(
      new RegExp(`dq-csv: output-changed: the output ${output} was cut short by another process \\(0 bytes; the run wrote \\d+\\)`),
    );
    expect((await stat(output)).size).toBe(0);

    const refused = await runCli(sampleArgs(input, output, ...flags(store), '--resume'), sandbox.env());
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`dq-csv: resume-mismatch: the output ${output} is shorter (0 bytes) than the checkpoint says`);

    await rename(`${output}.1`, output);
    const resumed = await runCli(sampleArgs(input, output, ...flags(store), '--resume'), sandbox.env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ outcome: 'done', rows: ROWS });
    expect((await readFile(output)).includes(0)).toBe(false);
  });

  it("renamed away and a new empty file created in its place (logrotate's default): exit 2, the new file left as it is", async () => {
    const { output, store } = await caseOf('rotated-create');
    const stopped = await changedMidRun(output, store, async () => {
      await rename(output, `${output}.1`);
      await writeFile(output, '');
    });
    expect(stopped.code, stopped.stderr).toBe(2);
    expect(stopped.stderr).toContain(`dq-csv: output-changed: the output ${output} was replaced by another file while the run wrote it`);
    expect((await stat(output)).size).toBe(0);
  });

  it('the rejects file deleted: exit 2 naming it', async () => {
    const { output, rejects, store } = await caseOf('rejects-deleted');
    const stopped = await changedMidRun(output, store, () => rm(rejects));
    expect(stopped.code, stopped.stderr).toBe(2);
    expect(stopped.stderr).toContain(`dq-csv: output-changed: the rejects file ${rejects} was deleted or renamed while the run wrote it`);
    expect(summaryOf(stopped)).toMatchObject({ outcome: 'stopped', error: { code: 'output-changed' } });
  });

  it("the output's folder removed: exit 2, and the stop names no checkpoint, as there is none left", async () => {
    const { folder, output } = await caseOf('folder-removed');
    const stopped = await changedMidRun(output, join(dir, 'folder-removed-store'), () => rm(folder, { recursive: true }));
    expect(stopped.code, stopped.stderr).toBe(2);
    expect(stopped.stderr).toMatch(/dq-csv: output-changed: the (output|rejects file) .* was deleted or renamed while the run wrote it/);
    expect(stopped.stderr).toMatch(
      /; rerun without --resume to clean the input from the start .*; input records 1-\d+ were written, but their checkpoint is gone$/m,
    );
    expect(stopped.stderr).not.toMatch(/\n\s+at /);
    expect(summaryOf(stopped)).not.toHaveProperty('checkpoint');
  });
});

describe("a run's lock removed by hand mid-run", () => {
  it('still keeps a second run off the output: exit 75 naming the running pid and the removed lock, not a hard link; the first run finishes', async () => {
    const { output, store } = await caseOf('lock-removed');
    const child = startCli(sampleArgs(input, output, ...flags(store)), sandbox.env());
    const first = completed(child);
    await checkpointPast(output, 300, first);
    await rm(`${output}.lock`);
    const second = await runCli(sampleArgs(input, output, ...flags(store), '--resume'), sandbox.env());
    expect(second.code, second.stderr).toBe(75);
    expect(second.stderr).toMatch(
      new RegExp(
        `^dq-csv: output-locked: another dq-csv run is writing ${output} \\(pid ${child.pid} on .*\\), though its lock ${output}.lock was removed; try again when it has finished`,
        'm',
      ),
    );
    expect(second.stderr).not.toContain('hard link');
    const done = await first;
    expect(done.code, done.stderr).toBe(0);
    expect(await comparable(output)).toEqual(await comparable(straight));
  });
});

describe("an output's folder made read-only mid-run", () => {
  // As root every folder is writable: the run is started as root without the capabilities that
  // override file permissions (setpriv), which reaches the repository wherever the clone sits (a
  // private folder such as /root included), in folders of its own.
  it.runIf(process.getuid?.() === 0 && existsSync('/usr/bin/setpriv'))(
    'stops with exit 1 naming the checkpoint and EACCES, prints its summary (no "bug in dq-csv" over a lock it cannot remove); writable again, --resume finishes every row',
    async () => {
      const { folder } = await caseOf('read-only');
      const own = join(folder, 'own');
      await mkdir(join(own, 'out'), { recursive: true });
      const source = join(own, 'in.csv');
      await copyFile(input, source);
      const out = join(own, 'out', 'out.csv');
      const withoutOverride = (...more: string[]) =>
        spawn(
          'setpriv',
          [
            '--inh-caps=-dac_override,-dac_read_search',
            '--bounding-set=-dac_override,-dac_read_search',
            process.execPath,
            CLI,
            ...sampleArgs(source, out, ...flags('off'), ...more),
          ],
          {
            env: { ...process.env, ...sandbox.env(), HOME: own, TMPDIR: own },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
      const run = completed(withoutOverride());
      await checkpointPast(out, 300, run);
      await chmod(join(own, 'out'), 0o555);
      const stopped = await run;
      expect(stopped.code, stopped.stderr).toBe(1);
      expect(stopped.stderr).toMatch(
        new RegExp(
          `^dq-csv: output-io: cannot write the checkpoint ${out}.checkpoint.json: permission denied \\(EACCES\\): its folder or the file was made read-only during the run.*then rerun with --resume; input records 1-\\d+ are written and checkpointed$`,
          'm',
        ),
      );
      expect(stopped.stderr).not.toContain('bug in dq-csv');
      expect(summaryOf(stopped)).toMatchObject({ outcome: 'stopped', exitCode: 1, checkpoint: `${out}.checkpoint.json`, error: { code: 'output-io' } });

      await chmod(join(own, 'out'), 0o755);
      const resumed = await completed(withoutOverride('--resume'));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed)).toMatchObject({ outcome: 'done', rows: ROWS });
      expect(await comparable(out)).toEqual(await comparable(straight));
    },
  );
});

describe('an output replaced between a kill -9 and --resume', () => {
  it('by a longer file (an older output copied over it) is refused, naming it, not cut back and continued; the file the run wrote resumes', async () => {
    const { output, store } = await caseOf('replaced-after-kill');
    const child = startCli(sampleArgs(input, output, ...flags(store)), sandbox.env());
    const run = completed(child);
    await checkpointPast(output, 300, run);
    child.kill('SIGKILL');
    await run;
    await rename(output, `${output}.killed`);
    // Another day's output, longer than the killed run's: its start would stay, the rows after the checkpoint appended to it.
    const other = join(dir, 'other-day.csv');
    await writeFile(other, makeSampleCsv(ROWS, 23));
    const older = await runCli(sampleArgs(other, join(dir, 'other-day.out.csv'), ...flags(store)), sandbox.env());
    expect(older.code, older.stderr).toBe(0);
    await copyFile(join(dir, 'other-day.out.csv'), output);
    const refused = await runCli(sampleArgs(input, output, ...flags(store), '--resume'), sandbox.env());
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^dq-csv: resume-mismatch: the output ${output} is not the file the interrupted run wrote: its bytes \\d+-\\d+, the last the checkpoint counts, differ from what the run wrote there \\(replaced or rewritten since the run stopped\\?\\); put back the file the run wrote and rerun with --resume, or delete ${output}.checkpoint.json and rerun without --resume`,
      ),
    );
    expect(refused.stderr.split('\n').filter(Boolean)).toHaveLength(1);

    await rename(`${output}.killed`, output);
    const resumed = await runCli(sampleArgs(input, output, ...flags(store), '--resume'), sandbox.env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await comparable(output)).toEqual(await comparable(straight));
  });
});

describe('an input replaced while it is read', () => {
  it('by another file renamed over its name: the run reads the file it opened to its end, also where it reads a part again', async () => {
    // Wide rows (a 300-byte note) and a quote never closed on row 5,000: the run reads on from the
    // line after it once it has scanned 1 MiB for the closing quote, reading the input again from
    // there (README "Input"), after the file below was renamed over the input's name.
    const wide = (csv: string) =>
      csv
        .trimEnd()
        .split('\n')
        .map((line, i) => `${line};${i === 0 ? 'notiz' : 'n'.repeat(300)}`);
    const lines = wide(makeSampleCsv(8000, 22));
    lines.splice(5000, 0, `K9;"Offen GmbH;Hauptstraße 1;10115;Berlin;DE;;2024-01-01;${'n'.repeat(300)}`);
    const { folder, output, store } = await caseOf('input-replaced');
    const original = join(folder, 'export.csv');
    await writeFile(original, lines.join('\n') + '\n');
    // The next export: the same rows under other customer numbers (X… instead of K…).
    const next = join(folder, 'export.next.csv');
    await writeFile(next, lines.map((line, i) => (i === 0 ? line : line.replace(/^K/, 'X'))).join('\n') + '\n');

    const child = startCli(sampleArgs(original, output, ...flags(store), '--max-failed', '0.01'), sandbox.env());
    const run = completed(child);
    await checkpointPast(output, 100, run);
    await rename(next, original);
    const done = await run;
    expect(done.code, done.stderr).toBe(0);
    expect(summaryOf(done)).toMatchObject({ outcome: 'done', rows: 8000, rejects: 1 });
    const ids = (await readCsv(output, { delimiter: ';' })).rows.map((row) => row[0]);
    expect(ids.filter((id) => id!.startsWith('X'))).toEqual([]);
    expect(ids).toEqual(lines.slice(1).flatMap((line) => (line.startsWith('K9;') ? [] : [line.split(';')[0]])));
    const rejects = await readFile(join(folder, 'out.rejects.csv'), 'utf8');
    expect(rejects.trimEnd().split('\n')).toHaveLength(2);
    expect(rejects).toContain('5001,broken-quoting,');
  });
});

describe('an input that is standard input', () => {
  it('--input - (no such file) says dq-csv does not read standard input and what to do', async () => {
    const { folder } = await caseOf('stdin');
    const child = spawn(process.execPath, [CLI, ...sampleArgs('-', join(folder, 'out.csv'))], {
      cwd: folder,
      env: { ...process.env, ...sandbox.env() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // A pipeline feeding it: dq-csv exits without reading it (EPIPE for the writer).
    child.stdin.on('error', () => undefined);
    child.stdin.end(await readFile(input));
    const run = await completed(child);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toBe(
      `dq-csv: input-unreadable: there is no file ${join(folder, '-')}: dq-csv does not read standard input (--input -), as it reads the input from where it stopped on --resume; write the stream to a file first and pass that file\n`,
    );
  });
});

describe('a run stopped before it wrote its first checkpoint', () => {
  it('names no checkpoint in its summary or message (there is none to resume or delete)', async () => {
    const { folder, output } = await caseOf('store-refused');
    const file = join(folder, 'a-file');
    await writeFile(file, '');
    // A result store under a file: refused when the store opens, before the output is written.
    const run = await runCli(sampleArgs(input, output, '--store', join(file, 'store')), sandbox.env());
    expect(run.code, run.stderr).toBe(2);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({ outcome: 'stopped', exitCode: 2 });
    expect(summary).not.toHaveProperty('checkpoint');
    expect(summary.error.message).toMatch(/; no input record is written yet; fix what the error names, then rerun$/);
    expect(run.stderr).not.toContain('checkpoint');
    await expect(stat(`${output}.checkpoint.json`)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
