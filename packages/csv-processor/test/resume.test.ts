import { appendFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import {
  batchCalls,
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
    expect(run.stderr).toContain('resume-mismatch');
    expect(run.stderr).toContain('include');
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
