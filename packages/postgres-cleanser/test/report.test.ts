import { execFileSync } from 'node:child_process';
import { lstat, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilentLogger } from '@dq/core';
import { cleanse } from '../src/index.js';
import { launchChromium, openReport } from '@dq/core/report-browser';
import type { Browser, LoadedReport } from '@dq/core/report-browser';
import { API_KEY, MAP, billable, cleanseArgs, createCustomers, runCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
let launched: Promise<Browser> | undefined;
/** Chromium, started by the test on first use: when it is missing, every test fails saying how to install it (nothing is skipped). */
const chromium = (): Promise<Browser> => (launched ??= launchChromium());
let dir: string;
beforeAll(async () => {
  env = await startEnv();
  dir = await mkdtemp(join(tmpdir(), 'dq-pg-report-'));
});
afterAll(async () => {
  await (await launched?.catch(() => undefined))?.close();
  await env?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function at(summary: Record<string, unknown>, path: string): string {
  return String(path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)?.[k], summary));
}

/** Every marked number on the page equals the summary's at the same path; the counts are all there. */
function expectNumbersOf(page: LoadedReport, summary: Record<string, unknown>): void {
  for (const [path, values] of Object.entries(page.metrics)) for (const v of values) expect(v, path).toBe(at(summary, path));
  for (const path of ['rows', 'written', 'unchanged', 'conflicts', 'apiCalls', ...Object.keys(summary['byStatus'] as object).map((s) => `byStatus.${s}`)]) {
    expect(page.metrics[path], path).toBeDefined();
  }
}

describe('dq-pg run report', () => {
  it("cleanse --report and report --run render the run's own numbers, corrections from the audit, no password and no markup from the data", async () => {
    const db = await env.pg.createDatabase();
    const password = decodeURIComponent(new URL(db).password);
    expect(password.length).toBeGreaterThan(3);
    await createCustomers(db, 150);
    await withClient(db, async (c) => {
      await c.query(`UPDATE customers SET street = '<script>alert(1)</script>Hauptstr.', house_number = '5', address_line = NULL WHERE id = 1`);
      await c.query(
        `UPDATE customers SET street = NULL, house_number = NULL, postal_code = NULL, city = NULL, address_line = NULL, locality_line = NULL, country = NULL WHERE id = 2`,
      );
    });
    const first = join(dir, 'cleanse.html');
    const result = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'nightly', '--batch-size', '40', '--max-failed', '1', '--report', first]));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`report written to ${first}`);
    const summary = summaryOf(result);

    const page = await openReport(await chromium(), first);
    expect(page.consoleErrors).toEqual([]);
    expect(page.requests).toEqual([]);
    expect(page.scripts).toBe(0);
    expect(page.overflowsPhone).toBe(false);
    expectNumbersOf(page, summary);
    expect(page.details['rate.calls']).toEqual([String(summary['apiCalls'])]);

    // Corrections per column, counted independently from the audit view.
    const audit = await withClient(
      db,
      async (c) =>
        (
          await c.query<{ col: string; n: number }>(
            `SELECT k AS col, count(*)::int AS n FROM dq_cleanse.audit a, jsonb_object_keys(a.before) k
        WHERE a.run_id = 'nightly' AND a.before->k IS DISTINCT FROM a.after->k GROUP BY 1`,
          )
        ).rows,
    );
    expect(audit.length).toBeGreaterThan(0);
    const shown = Object.fromEntries(
      Object.entries(page.details)
        .filter(([k]) => k.startsWith('corrections.') && k !== 'corrections.rows')
        .map(([k, v]) => [/\((.*)\)$/.exec(k)?.[1], Number(v[0])]),
    );
    expect(shown).toEqual(Object.fromEntries(audit.map((r) => [r.col, r.n])));
    expect(page.text).toContain('dq-pg review export --run nightly --output review.csv');
    expect(page.text).toContain('dq-pg status --run nightly');
    expect(
      Object.keys(page.details).filter((k) => k.startsWith('code.')),
      JSON.stringify(summary),
    ).not.toEqual([]);

    // The same run from the database alone, by another process.
    const second = join(dir, 'run.html');
    const again = await runCli(['report', '--db', db, '--run', 'nightly', '--output', second]);
    expect(again.code, again.stderr).toBe(0);
    const printed = JSON.parse(again.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
    const page2 = await openReport(await chromium(), second);
    expect(page2.consoleErrors).toEqual([]);
    expect(page2.requests).toEqual([]);
    expectNumbersOf(page2, summary);
    expectNumbersOf(page2, printed);

    for (const file of [first, second]) {
      const html = await readFile(file, 'utf8');
      expect(html).not.toContain(password);
      expect(html).not.toContain(API_KEY);
      expect(html).not.toContain('<script>');
    }
    expect(page.text + page2.text).not.toContain(password);
  });

  it('shows the conflicts of a run (rows another session changed while the run read them), with their keys and how to see them', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 80);
    const map = Object.fromEntries(MAP.split(',').map((p) => p.split('=') as [string, string]));
    const base = {
      db,
      table: 'customers',
      key: 'id',
      map,
      baseUrl: env.sandbox.url,
      apiKey: API_KEY,
      logger: createSilentLogger(),
      engine: { threads: 1, rateLimits: { batch: 0 } },
    };
    const wouldChange: string[] = [];
    await cleanse({ ...base, dryRun: true, onChange: (c) => wouldChange.push(c.key) });
    const edited = wouldChange.filter((_, i) => i % 3 === 0);
    expect(edited.length).toBeGreaterThan(3);
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    let summary;
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE customers SET house_number = 'edited-' || id WHERE id = ANY ($1::bigint[])`, [edited]);
      const run = cleanse({ ...base, runId: 'conflicted', batchSize: 500 });
      for (const until = Date.now() + 20_000; ;) {
        await other.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await other.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'dq-pg%' AND pg_backend_pid() = ANY (pg_blocking_pids(pid))`,
        );
        if (rows.length > 0) break;
        if (Date.now() > until) throw new Error('the run never waited for the other session');
        await sleep(20);
      }
      await other.query('COMMIT');
      summary = await run;
    } finally {
      await other.end();
    }
    expect(summary.conflicts).toBe(edited.length);
    const file = join(dir, 'conflicts.html');
    const result = await runCli(['report', '--db', db, '--run', 'conflicted', '--output', file]);
    expect(result.code, result.stderr).toBe(0);
    const page = await openReport(await chromium(), file);
    expect(page.consoleErrors).toEqual([]);
    expect(new Set(page.metrics['conflicts'])).toEqual(new Set([String(edited.length)]));
    const first = [...edited].sort()[0]!;
    expect(page.text).toContain('dq-pg status --run conflicted');
    expect(page.text).toContain(first);
  });

  it("refuses before any call a --report that is a result store's file (exit 2, the store unchanged), and writes one to a device in place", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 20);
    const store = join(dir, 'store');
    const first = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'stored', '--store', store]));
    expect(first.code, first.stderr).toBe(0);
    const calls = billable(env.sandbox);
    const before = await readFile(join(store, 'results.mdb'));
    const refused = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'refused', '--store', 'off', '--report', join(store, 'results.mdb')]));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`--report: ${join(store, 'results.mdb')} is a file of a result store's database`);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(billable(env.sandbox)).toBe(calls);
    expect((await readFile(join(store, 'results.mdb'))).equals(before)).toBe(true);
    if (process.getuid?.() === 0) {
      // As root, a report renamed over /dev/null would replace the device for every program.
      const nullDevice = join(dir, 'null');
      execFileSync('mknod', [nullDevice, 'c', '1', '3']);
      const toDevice = await runCli(['report', '--db', db, '--run', 'stored', '--output', nullDevice]);
      expect(toDevice.code, toDevice.stderr).toBe(0);
      expect((await lstat(nullDevice)).isCharacterDevice()).toBe(true);
    }
  });

  it('report --run names a run that is not there (exit 2) and a missing --output', async () => {
    const db = await env.pg.createDatabase();
    const missing = await runCli(['report', '--db', db, '--run', 'nope', '--output', join(dir, 'x.html')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope');
    const noOutput = await runCli(['report', '--db', db, '--run', 'nope']);
    expect(noOutput.code).toBe(2);
    expect(noOutput.stderr).toContain('--output');
  });
});
