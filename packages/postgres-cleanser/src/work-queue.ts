import type pg from 'pg';
import { STATE_SCHEMA } from './bookkeeping.js';
import type { TargetTable } from './preflight.js';
import { endedBySetting, sessionLost } from './db.js';
import { CleanseError } from './errors.js';

/** A key range held by this process: keys in (`lo`, `hi`], of which (`lo`, `lastKey`] are done. */
export interface ClaimedRange {
  rangeNo: number;
  /** Exclusive lower bound; null = from the first key. */
  lo: string | null;
  /** Inclusive upper bound; null = to the last key. */
  hi: string | null;
  /** Checkpoint: the last key whose page committed; null = nothing yet (from `lo`). */
  lastKey: string | null;
}

/**
 * Hands out the key ranges of a run to the processes working on it (scale-out). A range
 * is claimed with `SELECT … FOR UPDATE SKIP LOCKED` on its `ranges` row, in a transaction kept open
 * on a connection of its own for as long as the range is worked on: two processes never hold the
 * same range, and when a process dies its connection closes, the lock goes and another process (or
 * the restarted one) picks the range up at its checkpoint. Progress is written to `progress` by the
 * page transactions, a different row, so the claim never blocks them.
 *
 * Ranges are cut lazily from a frontier key (`runs.frontier`): each new range is the next
 * `rangeRows` keys, so nothing scans the whole table up front.
 */
export class RangeQueue {
  readonly #client: pg.Client;
  readonly #runId: string;
  readonly #target: TargetTable;
  #holding = false;

  /** @param client a connection used for nothing else: it holds the claim's transaction open. */
  constructor(client: pg.Client, runId: string, target: TargetTable) {
    this.#client = client;
    this.#runId = runId;
    this.#target = target;
  }

  /** Claims the next unfinished range, cutting new ones as needed; null when no range is left to claim. */
  async claim(): Promise<ClaimedRange | null> {
    try {
      return await this.#claim();
    } catch (e) {
      throw this.#sessionEnded(e);
    }
  }

  /**
   * The error that ended the claim's session, once node-postgres reported it: the range's lock
   * went with it, and another process may be working the range already (undefined while it lasts).
   */
  lost(): unknown {
    const e = sessionLost(this.#client);
    return e === undefined ? undefined : this.#sessionEnded(e);
  }

  /**
   * `e`, or a `db-setting` error when the server ended the claim's session for
   * `idle_in_transaction_session_timeout`: the claim's transaction is idle, by design, for as long
   * as the range is worked on, so a timeout shorter than that ends every run (exit 2, not a
   * database to retry later).
   */
  #sessionEnded(e: unknown): unknown {
    if (!endedBySetting(this.#client)) return e;
    return new CleanseError(
      'db-setting',
      `the database ended the session in which dq-pg holds its claim on a key range of ${this.#target.qualified} (SQLSTATE 25P03): the server setting idle_in_transaction_session_timeout is shorter than dq-pg takes to work one range, and the claim's transaction stays open, idle between statements, for that long (README "What a run does", Key ranges); have the setting raised or turned off for this user (ALTER ROLE … SET idle_in_transaction_session_timeout = 0), or take smaller ranges with --pages-per-claim; the run keeps what it committed: then rerun with --run-id ${this.#runId}`,
      { cause: e },
    );
  }

  async #claim(): Promise<ClaimedRange | null> {
    await this.release();
    for (;;) {
      await this.#client.query('BEGIN');
      this.#holding = true;
      const { rows } = await this.#client.query<{ range_no: number; lo: string | null; hi: string | null }>(
        `SELECT r.range_no, r.lo, r.hi FROM ${STATE_SCHEMA}.ranges r
           JOIN ${STATE_SCHEMA}.progress p ON p.run_id = r.run_id AND p.range_no = r.range_no
          WHERE r.run_id = $1 AND NOT p.done
          ORDER BY r.range_no LIMIT 1 FOR UPDATE OF r SKIP LOCKED`,
        [this.#runId],
      );
      const row = rows[0];
      if (row) {
        // Read the checkpoint after taking the lock: the join above saw the statement's snapshot,
        // which may predate the last commit of the range's previous holder.
        const p = await this.#client.query<{ last_key: string | null; done: boolean }>(
          `SELECT last_key, done FROM ${STATE_SCHEMA}.progress WHERE run_id = $1 AND range_no = $2`,
          [this.#runId, row.range_no],
        );
        const progress = p.rows[0];
        if (progress && !progress.done) return { rangeNo: row.range_no, lo: row.lo, hi: row.hi, lastKey: progress.last_key };
        await this.release();
        continue;
      }
      await this.release();
      if (!(await this.#cutRange())) return null;
    }
  }

  /** Ends the claim on the current range (its progress is already committed by the page transactions). */
  async release(): Promise<void> {
    if (!this.#holding) return;
    this.#holding = false;
    await this.#client.query('COMMIT').catch((e: unknown) => {
      throw this.#sessionEnded(e);
    });
  }

  /** Adds the next range after the frontier; false when the key space is exhausted. */
  async #cutRange(): Promise<boolean> {
    const { key, qualified } = this.#target;
    await this.#client.query('BEGIN');
    try {
      const run = await this.#client.query<{ frontier: string | null; exhausted: boolean; range_rows: number }>(
        `SELECT frontier, exhausted, range_rows FROM ${STATE_SCHEMA}.runs WHERE run_id = $1 FOR NO KEY UPDATE`,
        [this.#runId],
      );
      const r = run.rows[0];
      if (!r || r.exhausted) {
        await this.#client.query('COMMIT');
        return false;
      }
      const after = r.frontier === null ? '' : `WHERE t.${key.quoted} > $1::${key.type}`;
      const params = r.frontier === null ? [r.range_rows - 1] : [r.frontier, r.range_rows - 1];
      const off = `$${params.length}`;
      const hiRow = await this.#client.query<{ hi: string }>(
        `SELECT t.${key.quoted}::text AS hi FROM ${qualified} AS t ${after} ORDER BY t.${key.quoted} OFFSET ${off} LIMIT 1`,
        params,
      );
      // No key that far: this range runs to the end of the table, and is the last one.
      const hi = hiRow.rows[0]?.hi ?? null;
      await this.#client.query(
        `WITH n AS (SELECT COALESCE(max(range_no), 0) + 1 AS range_no FROM ${STATE_SCHEMA}.ranges WHERE run_id = $1),
              r AS (INSERT INTO ${STATE_SCHEMA}.ranges (run_id, range_no, lo, hi) SELECT $1, n.range_no, $2, $3 FROM n)
         INSERT INTO ${STATE_SCHEMA}.progress (run_id, range_no, last_key) SELECT $1, n.range_no, $2 FROM n`,
        [this.#runId, r.frontier, hi],
      );
      await this.#client.query(`UPDATE ${STATE_SCHEMA}.runs SET frontier = $2, exhausted = $3, updated_at = now() WHERE run_id = $1`, [
        this.#runId,
        hi,
        hi === null,
      ]);
      await this.#client.query('COMMIT');
      return true;
    } catch (e) {
      await this.#client.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }
}
