import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { billable, cleanseArgs, COLUMNS, createCustomers, rowTexts, runCli, runWithin, spawnCli, startEnv, summaryOf, until, withClient } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg rollback', () => {
  it('restores byte-identical values and reports rows changed after the run instead of overwriting them', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 200);
    await withClient(db, async (c) => {
      // Values a careless round trip would alter: trailing blanks, decomposed accents, quotes,
      // backslashes, an empty string beside NULLs, characters outside the BMP.
      await c.query(`UPDATE customers SET city = city || '  ' WHERE id % 7 = 0 AND city IS NOT NULL`);
      await c.query(`UPDATE customers SET street = replace(street, 'ü', E'u\\u0308') WHERE id % 5 = 0`);
      await c.query(`UPDATE customers SET locality_line = locality_line || ' "x" \\ 🏠' WHERE id % 3 = 0 AND locality_line IS NOT NULL`);
      await c.query(`UPDATE customers SET house_number = '' WHERE id % 11 = 0 AND house_number IS NULL`);
    });
    const original = await rowTexts(db);

    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'to-undo', '--batch-size', '50']));
    expect(run.code).toBe(0);
    const written = summaryOf(run)['written'] as number;
    expect(written).toBeGreaterThan(40);
    const cleaned = await rowTexts(db);
    const changed = [...original.keys()].filter((id) => cleaned.get(id) !== original.get(id));
    expect(changed.length).toBe(written);

    const touchedLater = changed.slice(0, 5);
    await withClient(db, (c) => c.query(`UPDATE customers SET city = 'Changed later' WHERE id = ANY ($1::bigint[])`, [touchedLater]));
    const beforeRollback = await rowTexts(db);

    const undo = await runCli(['rollback', '--db', db, '--run', 'to-undo']);
    // Done, but rows changed since the run were left alone: exit 4, for a person to look at them.
    expect(undo.code).toBe(4);
    const summary = JSON.parse(undo.stdout) as { restored: number; conflicts: number; conflictKeys: string[] };
    expect(summary.restored).toBe(written - touchedLater.length);
    expect(summary.conflicts).toBe(touchedLater.length);
    expect([...summary.conflictKeys].sort()).toEqual([...touchedLater].sort());

    const restored = await rowTexts(db);
    for (const [id, text] of original) {
      if (touchedLater.includes(id)) expect(restored.get(id)).toBe(beforeRollback.get(id));
      else expect(restored.get(id)).toBe(text);
    }

    const status = await runCli(['status', '--db', db, '--run', 'to-undo', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: 'to-undo', state: 'rolled-back', restored: written - 5, rollbackConflicts: 5 });

    // A second rollback tries the conflicting rows again, and still does not clobber them.
    const second = await runCli(['rollback', '--db', db, '--run', 'to-undo']);
    expect(second.code).toBe(4);
    const again = JSON.parse(second.stdout) as { restored: number; conflicts: number };
    expect(again).toMatchObject({ restored: 0, conflicts: 5 });
    expect(await rowTexts(db)).toEqual(restored);
  });

  it("tried again, leaves a row that a later run corrected since, though it holds the run's values again; the later run's rollback then restores every row exactly", async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 120);
    await withClient(db, (c) => c.query('CREATE TABLE snap AS SELECT * FROM customers'));
    const original = await rowTexts(db);
    const a = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'A', '--store', 'off']));
    expect(a.code, a.stderr).toBe(0);
    const afterA = await rowTexts(db);
    const id = [...original.keys()].find((k) => afterA.get(k) !== original.get(k));
    if (id === undefined) throw new Error('run A corrected no row');

    // A clerk edits the row: the rollback of A leaves it (a conflict, exit 4).
    await withClient(db, (c) => c.query(`UPDATE customers SET city = 'Zed' WHERE id = $1`, [id]));
    const first = await runCli(['rollback', '--db', db, '--run', 'A']);
    expect(first.code, first.stderr).toBe(4);
    expect(JSON.parse(first.stdout)).toMatchObject({ conflicts: 1, conflictKeys: [id] });
    // The clerk puts the row back as it was before A; a later run C corrects it (and the rows A's
    // rollback restored) again, to the values A wrote.
    await withClient(db, (c) =>
      c.query(`UPDATE customers c SET (${COLUMNS.join(', ')}) = (SELECT ${COLUMNS.join(', ')} FROM snap s WHERE s.id = c.id) WHERE c.id = $1`, [id]),
    );
    expect((await rowTexts(db)).get(id)).toBe(original.get(id));
    const c = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'C', '--store', 'off']));
    expect(c.code, c.stderr).toBe(0);
    expect(await rowTexts(db)).toEqual(afterA);

    // A's rollback tried again: the row holds A's values, but because C wrote them.
    const again = await runCli(['rollback', '--db', db, '--run', 'A']);
    expect(again.code, again.stderr).toBe(4);
    expect(JSON.parse(again.stdout)).toMatchObject({ restored: 0, conflicts: 1, conflictKeys: [id] });
    expect(await rowTexts(db)).toEqual(afterA);
    // C's audit still holds: its rollback gives every row back its value from before C (= before A).
    const undoC = await runCli(['rollback', '--db', db, '--run', 'C']);
    expect(undoC.code, undoC.stderr).toBe(0);
    expect(JSON.parse(undoC.stdout)).toMatchObject({ conflicts: 0 });
    expect(await rowTexts(db)).toEqual(original);
  });

  it('rows a rollback could not restore (a later run wrote them too) keep their answers: a new run over them pays nothing (it bought them again)', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 60);
    await withClient(db, (c) => c.query('ALTER TABLE customers ADD COLUMN dq_status text'));
    const a = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'A']));
    expect(a.code, a.stderr).toBe(0);
    const written = summaryOf(a)['written'] as number;
    expect(written).toBeGreaterThan(10);
    // A later run with a status column writes every row, so A's rollback leaves A's rows as conflicts.
    const b = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'B', '--status-columns', 'status=dq_status']));
    expect(b.code, b.stderr).toBe(0);
    const undo = await runCli(['rollback', '--db', db, '--run', 'A']);
    expect(undo.code, undo.stderr).toBe(4);
    expect(JSON.parse(undo.stdout)).toMatchObject({ restored: 0, conflicts: written });
    const held = await rowTexts(db);
    const calls = billable(env.sandbox);
    const c = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'C']));
    expect(c.code, c.stderr).toBe(0);
    expect(billable(env.sandbox) - calls).toBe(0);
    expect(await rowTexts(db)).toEqual(held);
  });

  it('a row another session holds locked: rollback ends in bounded time with exit 75, a killed rollback commits nothing later, and the rerun restores every row', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 60);
    const original = await rowTexts(db);
    const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'held', '--store', 'off']));
    expect(run.code, run.stderr).toBe(0);
    const cleaned = await rowTexts(db);
    const id = [...original.keys()].find((k) => cleaned.get(k) !== original.get(k));
    if (id === undefined) throw new Error('the run corrected no row');
    // Other dq-pg sessions of this database (none once every command ended).
    const busy = (): Promise<number> =>
      withClient(db, async (c) => {
        const { rows } = await c.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'dq-pg'`,
        );
        return rows[0]?.n ?? 0;
      });

    // An application's open transaction holds one audited row.
    const other = new pg.Client({ connectionString: db });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM customers WHERE id = $1 FOR UPDATE', [id]);
      const started = Date.now();
      const undo = await runWithin(['rollback', '--db', db, '--run', 'held'], 30_000);
      expect(undo.signal, 'the rollback waited for the lock until it was killed').toBeNull();
      expect(undo.code, undo.stderr).toBe(75);
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(undo.stderr).toContain('dq-pg: db-locked: "public"."customers"');
      expect(undo.stderr).toContain('rerun dq-pg rollback --run held once the lock is released');

      // A rollback killed (a scheduler's timeout) while it waits for the row: once the row is
      // released, nothing of its batch commits by itself.
      const killed = spawnCli(['rollback', '--db', db, '--run', 'held']);
      await new Promise((r) => setTimeout(r, 1_000));
      killed.child.kill('SIGKILL');
      await killed.done;
      await other.query('ROLLBACK');
      await until('the killed rollback session to end', async () => (await busy()) === 0, 20_000);
      expect(await rowTexts(db)).toEqual(cleaned);
    } finally {
      await other.end();
    }

    const again = await runCli(['rollback', '--db', db, '--run', 'held']);
    expect(again.code, again.stderr).toBe(0);
    expect(await rowTexts(db)).toEqual(original);
  }, 60_000);

  it('refuses to roll back a run id that does not exist, naming it', async () => {
    const db = await env.pg.createDatabase();
    const result = await runCli(['rollback', '--db', db, '--run', 'nope']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('run-not-found');
    expect(result.stderr).toContain('nope');
  });
});
