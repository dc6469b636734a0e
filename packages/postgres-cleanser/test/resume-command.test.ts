import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, createCustomers, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** The words of a command as a POSIX shell splits it (plain words and single-quoted parts, as `status` prints them). */
function shellWords(command: string): string[] {
  const words: string[] = [];
  for (const m of command.matchAll(/(?:[^\s']+|'[^']*')+/g)) words.push(m[0].replace(/'([^']*)'/g, '$1'));
  return words;
}

/** `dq-pg cleanse` of the customers table with every address column mapped, as run `runId`. */
const cleanseRun = (runId: string): string[] => [
  'cleanse',
  '--table',
  'customers',
  '--key',
  'id',
  '--map',
  'street=street,houseNumber=house_number,postalCode=postal_code,locality=city,country=country',
  '--run-id',
  runId,
];

/** The database and the sandbox's API settings, no client-side rate limit. */
const apiArgs = (db: string): string[] => ['--db', db, '--base-url', env.sandbox.url, '--api-key', API_KEY, '--rate-limit', '0'];

describe('dq-pg status: the resume command it prints', () => {
  it('resumes the run, whatever order the mapping was given in; a real difference is named by its flag', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 60);
    const api = apiArgs(db);
    const first = await runCli([...cleanseRun('mm3'), '--max-calls', '1', '--store', 'off', '--batch-size', '20', ...api]);
    expect(first.code, first.stderr).toBe(5);
    const status = await runCli(['status', '--db', db, '--run', 'mm3', '--json']);
    const resume = (JSON.parse(status.stdout) as { resume: string }).resume;
    expect(resume).toContain('--run-id mm3');
    const [program, ...args] = shellWords(resume);
    expect(program).toBe('dq-pg');

    // Another setting than the run's is refused, naming it.
    const other = await runCli([...args, '--country', 'AT', '--store', 'off', ...api]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('run-mismatch: --run-id mm3: that run was made with different --country (country=null)');

    // The run was made with --store off (no answer kept anywhere): the command that resumes it says so.
    expect(args.slice(args.indexOf('--store'), args.indexOf('--store') + 2)).toEqual(['--store', 'off']);
    const resumed = await runCli([...args, ...api]);
    expect(resumed.stderr).not.toContain('run-mismatch');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done', runTotals: { rows: 60 } });
    const stored = await withClient(db, async (c) => (await c.query(`SELECT to_regclass('dq_store.results') AS t`)).rows[0]?.t as string | null);
    expect(stored).toBeNull();
  }, 90_000);

  it('a run made with the store is joined by a process with --store off (its store down), and its resume command has no --store off', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 40);
    const api = apiArgs(db);
    const run = cleanseRun('ws');
    const first = await runCli([...run, '--max-calls', '1', '--batch-size', '20', ...api]);
    expect(first.code, first.stderr).toBe(5);
    const off = await runCli([...run, '--store', 'off', '--max-calls', '1', '--batch-size', '20', ...api]);
    expect(off.code, off.stderr).toBe(5);
    const status = await runCli(['status', '--db', db, '--run', 'ws', '--json']);
    expect((JSON.parse(status.stdout) as { resume: string }).resume).not.toContain('--store');
  }, 90_000);
});
