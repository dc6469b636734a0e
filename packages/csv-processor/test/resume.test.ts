import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { batchCalls, readCsv, runCli, startCli, summaryOf, tempDir } from './helpers.js';

const ROWS = 3000;
const BATCH = 100;
let sandbox: Sandbox;
let dir: string;
let cleanup: () => Promise<void>;
let input: string;

beforeAll(async () => {
  // A little latency per call so that a run lasts long enough to be killed at chosen points.
  sandbox = await startSandbox({
    port: 0,
    config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }], faults: { batch: { latencyMs: 3 } } },
  });
  ({ dir, cleanup } = await tempDir());
  input = join(dir, 'in.csv');
  await writeFile(input, makeSampleCsv(ROWS, 11));
});
afterAll(async () => {
  await sandbox.close();
  await cleanup();
});

const env = () => ({ DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY });
const args = (output: string, ...more: string[]) => [
  'validate',
  '--input',
  input,
  '--output',
  output,
  '--delimiter',
  ';',
  '--country',
  'DE',
  '--map',
  'addressLine=strasse,postalCode=plz,locality=ort,country=land',
  '--batch-size',
  String(BATCH),
  '--concurrency',
  '8',
  '--rate-limit',
  '0',
  ...more,
];

/** Rows of an output without the request-id and check-time columns, which legitimately differ between runs. */
async function comparable(path: string): Promise<string[][]> {
  const { header, rows } = await readCsv(path, { delimiter: ';' });
  const skip = [header.indexOf('dq_request_id'), header.indexOf('dq_checked_at')];
  return [header, ...rows].map((r) => r.filter((_, i) => !skip.includes(i)));
}

/** Starts the CLI and kills it with SIGKILL once its checkpoint says `atRecords` were consumed. */
async function killWhenPast(output: string, atRecords: number): Promise<number> {
  const child = startCli(args(output, '--resume'), env());
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (;;) {
    const done = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(r, 5)).then(() => false)]);
    if (done) throw new Error('the run finished before the kill point');
    const checkpoint = await readFile(`${output}.checkpoint.json`, 'utf8').catch(() => undefined);
    const records = checkpoint ? (JSON.parse(checkpoint) as { position: { records: number } }).position.records : 0;
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

  it('refuses to start over a checkpoint without --resume', async () => {
    const output = join(dir, 'no-resume.csv');
    await killWhenPast(output, 200);
    const run = await runCli(args(output), env());
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('checkpoint-exists');
    expect(run.stderr).toContain('--resume');
  });
});
