import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { readCsv, runCli, sandboxEnv, summaryOf, useTempDir } from './helpers.js';

const ROWS = 2000;
const dir = useTempDir();
let sandbox: SandboxProcess;

beforeAll(async () => {
  // 2,000 distinct addresses: each one call.
  const lines = ['strasse;nr;plz;ort'];
  for (let i = 1; i <= ROWS; i++) lines.push(`Hauptstraße;${i};10115;Berlin`);
  await writeFile(join(dir, 'in.csv'), `${lines.join('\n')}\n`);
  // No rate limit: the cap, not the clock, must stop the run.
  sandbox = await startSandboxProcess({ accounts: [{ id: 'cap', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0, validate: 0 } }] });
});
afterAll(async () => {
  await sandbox?.stop();
});

const args = (...extra: string[]): string[] => [
  'validate',
  '--input',
  join(dir, 'in.csv'),
  '--output',
  join(dir, 'out.csv'),
  '--delimiter',
  ';',
  '--country',
  'DE',
  '--map',
  'street=strasse,houseNumber=nr,postalCode=plz,locality=ort',
  '--rate-limit',
  '0',
  ...extra,
];

describe('--max-calls, the spending cap', () => {
  it('stops after exactly 500 billable calls with exit 5, and the resumed run makes the other 1,500', async () => {
    const env = sandboxEnv(sandbox);
    const first = await runCli(args('--max-calls', '500'), env);
    expect(first.code, first.stderr).toBe(5);
    expect(await sandbox.billable()).toBe(500);
    const stopped = summaryOf(first);
    expect(stopped.outcome).toBe('stopped');
    expect(stopped.error.code).toBe('max-calls-reached');
    expect(stopped.error.message).toMatch(/spending cap.*500.*--resume/);
    expect(stopped.budget).toMatchObject({ scope: 'local', billableCalls: 500, maxCalls: 500 });
    // The calls refused at the cap were never sent: the summary counts the 500 made, no more.
    expect(stopped.apiCalls).toBe(500);
    expect(first.stderr).not.toMatch(/\n\s+at /); // no stack trace

    const resumed = await runCli(args('--resume'), env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await sandbox.billable()).toBe(ROWS);
    const done = summaryOf(resumed);
    expect(done.outcome).toBe('done');
    expect(done.budget).toMatchObject({ billableCalls: 1500, maxCalls: null });
    // The summary's counts are the file's: the stopped run's 500 calls and the resumed run's 1,500.
    expect(done.apiCalls).toBe(ROWS);
    const out = await readCsv(join(dir, 'out.csv'), { delimiter: ';' });
    expect(out.rows).toHaveLength(ROWS);
    expect(out.rows.map((r) => r[1])).toEqual(Array.from({ length: ROWS }, (_, i) => String(i + 1)));
  }, 120_000);

  it('with worker threads and many calls at once: the stopped summary counts every call the account paid, none is bought twice, and the resumed totals count the whole file', async () => {
    const env = sandboxEnv(sandbox);
    const before = await sandbox.billable();
    // A store of its own: the first test's answers are in the default one.
    const output = ['--output', join(dir, 'threads.csv'), '--store', join(dir, 'threads-store')];
    const first = await runCli([...args('--max-calls', '500', '--threads', '2', '--concurrency', '256'), ...output], env);
    expect(first.code, first.stderr).toBe(5);
    expect((await sandbox.billable()) - before).toBe(500);
    expect(summaryOf(first).apiCalls).toBe(500);
    const resumed = await runCli([...args('--resume', '--threads', '2', '--concurrency', '256'), ...output], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((await sandbox.billable()) - before).toBe(ROWS); // no answer bought twice
    expect(summaryOf(resumed).apiCalls).toBe(ROWS);
  }, 120_000);

  it('with --store off, the advice does not promise that resuming keeps the answers paid for (nothing keeps them)', async () => {
    const run = await runCli(args('--max-calls', '5', '--store', 'off', '--output', join(dir, 'no-store.csv')), sandboxEnv(sandbox));
    expect(run.code, run.stderr).toBe(5);
    expect(summaryOf(run).error.message).toMatch(/; rerun with --resume to continue, with a new --max-calls or none$/);
    expect(run.stderr).not.toContain('not bought again');
  }, 60_000);
});

describe('--account-db, the shared rate budget', () => {
  it('a budget database that cannot be reached stops the run with exit 75 and a checkpoint, its password in no output', async () => {
    const env = sandboxEnv(sandbox);
    const before = await sandbox.billable();
    const out = ['--output', join(dir, 'unreachable.csv')];
    // The default rate limit: an endpoint without one (--rate-limit 0) has nothing to share.
    const withoutLimitFlag = args('--budget', 'postgres://etl:budget-pw-93af@127.0.0.1:1/dq').filter(
      (a, i, all) => !a.includes('out.csv') && a !== '--output' && a !== '--rate-limit' && all[i - 1] !== '--rate-limit',
    );
    const run = await runCli([...withoutLimitFlag, ...out], env);
    expect(run.code, run.stderr).toBe(75);
    const summary = summaryOf(run);
    expect(summary.outcome).toBe('stopped');
    expect(summary.error.code).toBe('budget-unreachable');
    expect(summary.apiCalls).toBe(0); // refused before sending: nothing reached the platform
    expect(summary.error.message).toMatch(/rate budget's database could not be reached.*--budget off/);
    expect(`${run.stdout}${run.stderr}`).not.toContain('budget-pw-93af');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(await sandbox.billable()).toBe(before); // nothing sent without the budget

    // --account-db names one database for the store and the budget: the store, opened first, finds
    // it unreachable; the run stops the same way, retriable, before anything is sent.
    const accountDb = args('--account-db', 'postgres://etl:budget-pw-93af@127.0.0.1:1/dq').filter(
      (a, i, all) => !a.includes('out.csv') && a !== '--output' && a !== '--rate-limit' && all[i - 1] !== '--rate-limit',
    );
    const both = await runCli([...accountDb, '--output', join(dir, 'unreachable-both.csv')], env);
    expect(both.code, both.stderr).toBe(75);
    expect(`${both.stdout}${both.stderr}`).not.toContain('budget-pw-93af');
    expect(both.stderr).not.toMatch(/\n\s+at /);
    expect(await sandbox.billable()).toBe(before);
  }, 60_000);
});
