import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgbouncerBinary, startPgBouncer, type TestPgBouncer } from '@dq/test-support/pgbouncer';
import { billable, cleanseArgs, createCustomers, rowTexts, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { TestEnv } from './support.js';

// dq-pg through a connection pooler (README, dq-pg section, "Connection poolers"): a real PgBouncer
// (Debian package pgbouncer) in front of a real PostgreSQL. In transaction pooling mode a client's
// transactions run on whichever server session is free, and dq-pg's session state (its run's lock,
// its settings, its prepared statements) would go to other clients: every command refuses with
// exit 2 before any work. Session pooling keeps a session per client: dq-pg works through it.

const installed = pgbouncerBinary() !== undefined;
if (!installed) console.warn('pooler.test.ts skipped: the pgbouncer binary is not installed (Debian: apt-get install pgbouncer)');

let env: TestEnv;
let db: string;
const bouncers: TestPgBouncer[] = [];
beforeAll(async () => {
  if (!installed) return;
  env = await startEnv();
  db = await env.pg.createDatabase();
  await createCustomers(db, 400);
}, 120_000);
afterAll(async () => {
  await Promise.all(bouncers.map((b) => b.stop()));
  await env?.stop();
});

async function bouncer(poolMode: 'session' | 'transaction' | 'statement'): Promise<string> {
  const started = await startPgBouncer({ serverUrl: db, poolMode, poolSize: 40 });
  bouncers.push(started);
  return started.through(db);
}

const REFUSAL =
  /^dq-pg: db-pooler: the database 127\.0\.0\.1:(\d+)\/t_\w+ \(--db\) is reached through a connection pooler in transaction or statement mode .*connect --db directly to PostgreSQL \(its own port, usually 5432\) or through a pool in session mode \(PgBouncer pool_mode = session\)/m;

describe.skipIf(!installed)('dq-pg through PgBouncer', () => {
  it('in transaction pooling mode: two cleanse processes on one run, and every other command, stop with exit 2 naming the pooler, before any call or write', async () => {
    const url = await bouncer('transaction');
    const password = new URL(db).password;
    const before = await rowTexts(db);
    const args = cleanseArgs(url, env.sandbox, ['--run-id', 'pooled', '--batch-size', '50', '--pages-per-claim', '1']);
    const runs = await Promise.all([spawnCli(args).done, spawnCli(args).done]);
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(REFUSAL);
      expect(run.stderr.match(REFUSAL)?.[1]).toBe(new URL(url).port);
      expect(run.stderr).not.toContain(password);
    }
    expect(billable(env.sandbox)).toBe(0);
    expect(await rowTexts(db)).toEqual(before);
    const commands = [
      ['status', '--db', url],
      ['rollback', '--db', url, '--run', 'pooled'],
      ['review', 'export', '--db', url, '--run', 'pooled', '--output', join(tmpdir(), `dq-pooler-${process.pid}.csv`)],
      ['init', '--db', url],
    ];
    for (const command of commands) {
      const run = await runCli(command);
      expect(run.code, `${command[0]}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(REFUSAL);
    }
    // No server session was left holding a run's lock for other clients of the pooler.
    await withClient(db, async (c) => expect((await c.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory'`)).rowCount).toBe(0));
  });

  it('in statement pooling mode: refused alike', async () => {
    const run = await runCli(['status', '--db', await bouncer('statement')]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(REFUSAL);
  });

  it('in session pooling mode: two processes share a run, the rerun buys nothing, and the rollback restores every row', async () => {
    const url = await bouncer('session');
    const before = await rowTexts(db);
    const args = cleanseArgs(url, env.sandbox, ['--run-id', 'in-session', '--batch-size', '50', '--pages-per-claim', '1', '--workers', '2']);
    const runs = await Promise.all([spawnCli(args).done, spawnCli(args).done]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    expect(runs.map((r) => summaryOf(r).rows as number).reduce((a, b) => a + b, 0)).toBe(400);
    const paid = billable(env.sandbox);
    expect(paid).toBeGreaterThan(0);
    expect(paid).toBeLessThanOrEqual(400);
    const rerun = await runCli(args);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(billable(env.sandbox)).toBe(paid);
    const undo = await runCli(['rollback', '--db', url, '--run', 'in-session']);
    expect(undo.code, undo.stderr).toBe(0);
    expect(await rowTexts(db)).toEqual(before);
  });
});
