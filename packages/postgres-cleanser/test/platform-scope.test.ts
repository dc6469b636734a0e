import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, MAP, rowTexts, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

// Which platform answered is part of what dq-pg remembers of a run: a table first cleansed in a
// trial against the sandbox, then against the platform. The platform here is the same sandbox
// reached under another host name (`localhost` for `127.0.0.1`), which dq-pg must treat as another
// platform, as it would the real one.
let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

const ROWS = 120;

/** The sandbox's URL under another host name: to dq-pg, another platform. */
const elsewhere = (url: string): string => url.replace('127.0.0.1', 'localhost');

async function cleanse(
  db: string,
  runId: string,
  baseUrl = env.sandbox.url,
): Promise<{ code: number | null; stderr: string; calls: number; summary?: Record<string, unknown> }> {
  const args = cleanseArgs(db, env.sandbox, ['--run-id', runId, '--batch-size', '20']);
  args[args.indexOf('--base-url') + 1] = baseUrl;
  const before = billable(env.sandbox);
  const run = await runCli(args);
  return { code: run.code, stderr: run.stderr, calls: billable(env.sandbox) - before, ...(run.code === 0 ? { summary: summaryOf(run) } : {}) };
}

async function table(): Promise<string> {
  const db = await env.pg.createDatabase();
  await createCustomers(db, ROWS);
  expect((await runCli(['init', '--db', db])).code).toBe(0);
  return db;
}

describe('dq-pg and the platform that answers', () => {
  it('a run against another platform checks again the rows a sandbox run corrected; a run against the same one reuses them', async () => {
    const db = await table();
    const trial = await cleanse(db, 'trial');
    expect(trial.code, trial.stderr).toBe(0);
    const corrected = Number(trial.summary?.['written']);
    expect(corrected).toBeGreaterThan(ROWS / 2);

    // Against the other platform the corrected rows are not "known": each is sent (its values are
    // the sandbox's corrections, which the other platform never answered).
    const real = await cleanse(db, 'real', elsewhere(env.sandbox.url));
    expect(real.code, real.stderr).toBe(0);
    expect(real.calls).toBeGreaterThanOrEqual(corrected);
    expect(real.summary).toMatchObject({ rows: ROWS, state: 'done' });

    // The trial's platform again: its known rows are still its own, nothing is bought.
    const again = await cleanse(db, 'trial-again');
    expect(again).toMatchObject({ code: 0, calls: 0 });
    expect(again.summary).toMatchObject({ rows: ROWS, apiCalls: 0, written: 0 });
  });

  it('refuses to resume a run against another platform, naming --base-url; the same platform resumes', async () => {
    const db = await table();
    const first = await cleanse(db, 'once');
    expect(first.code, first.stderr).toBe(0);
    const before = await rowTexts(db);
    const refused = await cleanse(db, 'once', elsewhere(env.sandbox.url));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('dq-pg: run-mismatch: --run-id once: that run was made with different --base-url (platform="127.0.0.1")');
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(refused.calls).toBe(0);
    expect(await rowTexts(db)).toEqual(before);
    const same = await cleanse(db, 'once');
    expect(same).toMatchObject({ code: 0, calls: 0 });
  });

  it('keeps reusing the rows an earlier dq-pg recorded as known (before the platform was part of their scope), and resumes its runs', async () => {
    const db = await table();
    const first = await cleanse(db, 'earlier');
    expect(first.code, first.stderr).toBe(0);
    // What an earlier dq-pg recorded: the run's settings without the platform, the known rows under
    // the scope of those settings (a digest of the table, key, mapping, mode, country, accepted
    // classes and extras, in that order).
    const mapping = Object.fromEntries(MAP.split(',').map((pair) => pair.split('=')));
    const settings = { table: '"public"."customers"', key: 'id', mapping, mode: 'address', country: null, accept: ['A', 'B', 'C'] };
    const sha256 = (o: unknown) => createHash('sha256').update(JSON.stringify(o)).digest('hex');
    const earlierScope = sha256({ ...settings, include: null });
    const earlierOptions = { ...settings, where: null, include: null };
    await withClient(db, async (c) => {
      await c.query('UPDATE dq_cleanse.known SET scope = $1', [earlierScope]);
      await c.query(`UPDATE dq_cleanse.runs SET options = options - 'platform', options_hash = $1 WHERE run_id = 'earlier'`, [sha256(earlierOptions)]);
    });
    const before = await rowTexts(db);

    const next = await cleanse(db, 'next');
    expect(next.code, next.stderr).toBe(0);
    expect(next.calls).toBe(0);
    expect(next.summary).toMatchObject({ rows: ROWS, apiCalls: 0, written: 0 });
    expect(await rowTexts(db)).toEqual(before);

    // The earlier run, named again (as a resume would), is joined, not refused.
    const resumed = await cleanse(db, 'earlier');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.calls).toBe(0);
  });
});
