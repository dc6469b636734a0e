import type pg from 'pg';
import { RANGE_TAKEN, STATE_SCHEMA } from './bookkeeping.js';
import type { StatusColumn, TargetTable } from './preflight.js';
import { holdsExactly, quoteIdent } from './db.js';
import type { SourceRow } from './row-values.js';
import { CleanseError, isConnectionLoss } from './errors.js';

/** Per-row data of one page write, arrays in page order (all the same length). */
export interface PageWrite {
  keys: string[];
  /** Whether the row's new values should be written (accepted and changed). */
  write: boolean[];
  status: string[];
  resultClass: (string | null)[];
  requestId: (string | null)[];
  /**
   * When the platform gave each row's answer (ISO time; null: no answer, e.g. refused locally,
   * then the page's write time). An answer from the result store keeps its own.
   */
  checkedAt?: (string | null)[];
  /** JSON texts (or null) for the results table. */
  candidates: (string | null)[];
  detail: (string | null)[];
  error: (string | null)[];
  /**
   * Per mapped column: values as read, and values to write where `write` is true. A null value to
   * write means "keep the value read": corrections never write NULL, and unchanged values are not
   * sent twice.
   */
  before: (string | null)[][];
  after: (string | null)[][];
  /** Per status column: its values as read (text), audited and guarded like the mapped columns'. */
  statusBefore?: (string | null)[][];
}

/** Progress counters of one page, added to the range's `progress` row. */
export interface PageCounts {
  rowsRead: number;
  unchanged: number;
  accepted: number;
  review: number;
  invalid: number;
  invalidInput: number;
  unavailable: number;
  apiCalls: number;
}

/**
 * Rows a cleanse run wrote corrections to, and rows a review run decided, are recorded in
 * `dq_cleanse.known` under `scope` (`knownScope` in runs.ts); a later read of a row that still
 * holds exactly the values the run left in it, whose results row was not rolled back and whose
 * answer is younger than `maxAgeMs` (a reviewer's decision does not age), comes with that answer
 * ({@link SourceRow.known}), so the row costs neither a call nor a write. `maxAgeMs` 0
 * (`--max-age 0`): rows are recorded, never reused.
 */
export interface KnownRows {
  scope: string;
  /**
   * The scope the same settings had before the platform was part of scopes (`knownScopes` in
   * runs.ts): rows recorded under it are looked up too, after those under `scope`.
   */
  scopeBefore?: string;
  maxAgeMs: number;
  /** Which rows a page write records: see {@link KnownRecording}; default `corrected`. */
  record?: KnownRecording;
}

/**
 * `known` without its {@link KnownRows.scopeBefore} when no row is known under that scope (the
 * table has no rows an earlier dq-pg recorded): one index probe now instead of one per row read.
 */
export async function knownInUse(client: pg.ClientBase, known: KnownRows | undefined): Promise<KnownRows | undefined> {
  if (known?.scopeBefore === undefined) return known;
  const { rows } = await client.query<{ used: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${STATE_SCHEMA}.known WHERE scope = $1) AS used`, [known.scopeBefore]);
  if (rows[0]?.used === true) return known;
  const { scopeBefore: _unused, ...own } = known;
  return own;
}

/**
 * Which rows of a page are recorded as known: `corrected` (a cleanse run), the rows whose
 * corrections were written; `decided` (a review run), every row of the page that is not a
 * conflict — the reviewer's decision holds for the values the row is left with, written or not.
 */
export type KnownRecording = 'corrected' | 'decided';

/** Fields of a known row's answer that the page read returns after the row's own values. */
const KNOWN_FIELDS = 6;

/**
 * The page read: next `$n` rows after a key, in key order, with no snapshot kept between pages
 * (keyset pagination). Parameters: [$1 after-key][, $2 upper key], then the limit; with `known`,
 * then the scopes (in order of preference) and the oldest check time reused. With `known` each row is looked up in
 * `dq_cleanse.known` by one index probe (a lateral join on the page's rows, not on the table), and
 * its results row only matches when every mapped column still holds the value written
 * (`IS NOT DISTINCT FROM`, compared in the column's type as the page write's guard does).
 */
export function pageReadSql(target: TargetTable, where: string | undefined, lower: boolean, upper: boolean, known = false): string {
  const k = target.key.quoted;
  const conds: string[] = [];
  let n = 0;
  if (lower) conds.push(`${target.qualified}.${k} > $${++n}::${target.key.type}`);
  if (upper) conds.push(`${target.qualified}.${k} <= $${++n}::${target.key.type}`);
  if (where !== undefined) conds.push(`(${where})`);
  const t = target.qualified;
  const filter = conds.length ? ` WHERE ${conds.join(' AND ')}` : '';
  if (!known) {
    const cols = [...target.columns.map((c) => `${t}.${c.quoted}`), ...target.status.map((s) => `${t}.${s.quoted}::text`)].join(', ');
    // ORDER BY the table's column, qualified: a bare name would sort by the text output column.
    return `SELECT ${t}.${k}::text AS dq_key, ${cols} FROM ${t}${filter} ORDER BY ${t}.${k} LIMIT $${n + 1}`;
  }
  const inner = [
    `${t}.${k}::text AS dq_key`,
    `${t}.${k} AS dq_sort`,
    ...target.columns.map((c, i) => `${t}.${c.quoted} AS c${i}`),
    ...target.status.map((s, i) => `${t}.${s.quoted}::text AS s${i}`),
  ].join(', ');
  const outer = ['p.dq_key', ...target.columns.map((_, i) => `p.c${i}`), ...target.status.map((_, i) => `p.s${i}`)].join(', ');
  const same = target.columns.map((c, i) => holdsExactly(`p.c${i}`, `r.after[${i + 1}]`, c.type)).join(' AND ');
  // Two lateral probes, each by the whole primary key of its table; LIMIT 1 keeps the planner from
  // flattening them into a join it might hash over the whole table, so the plan stays index
  // probes per row of the page whatever the statistics (the harness runs without autovacuum).
  // A review run's results row (its detail names the decision) is a person's decision, not a
  // bought answer: --max-age does not expire it (only a rollback, or an edit of the row, does).
  return `SELECT ${outer}, kr.status, kr.result_class, kr.request_id, kr.checked_at, kr.candidates, kr.detail
  FROM (SELECT ${inner} FROM ${t}${filter} ORDER BY ${t}.${k} LIMIT $${n + 1}) p
  LEFT JOIN LATERAL (SELECT kn.run_id FROM ${STATE_SCHEMA}.known kn WHERE kn.scope = ANY($${n + 2}::text[]) AND kn.row_key = p.dq_key COLLATE "C"
    ORDER BY array_position($${n + 2}::text[], kn.scope::text) LIMIT 1) kk ON true
  LEFT JOIN LATERAL (
    SELECT r.status, r.result_class, r.request_id, r.checked_at, r.candidates::text AS candidates, r.detail::text AS detail
      FROM ${STATE_SCHEMA}.results r
     WHERE r.run_id = kk.run_id AND r.row_key = p.dq_key COLLATE "C" AND r.rolled_back_at IS NULL AND r.after IS NOT NULL
       AND (r.checked_at > $${n + 3}::timestamptz OR r.detail ? 'decision') AND ${same} LIMIT 1) kr ON true
 ORDER BY p.dq_sort`;
}

/** Where a page moves its range's checkpoint, and the counts it adds to the range's progress. */
export interface PageCheckpoint {
  rangeNo: number;
  /** The checkpoint the page was read from; the write only happens if it still stands there. */
  prevKey: string | null;
  lastKey: string | null;
  done: boolean;
  counts: PageCounts;
}

const FIXED_TYPES = [
  'text',
  'timestamptz',
  'text',
  'KEY',
  'KEY',
  'KEY[]',
  'bool[]',
  'text[]',
  'text[]',
  'text[]',
  'jsonb[]',
  'jsonb[]',
  'jsonb[]',
  'integer',
  'text',
  'text',
  'bool',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
];

/** SQL types of the parameters of {@link pageWriteSql}, in order (for PREPARE). */
export function pageWriteParamTypes(target: TargetTable, recordKnown?: KnownRecording): string[] {
  const fixed = FIXED_TYPES.map((t) => t.replace('KEY', target.key.type));
  return [
    ...fixed,
    ...target.columns.flatMap(() => ['text[]', 'text[]']),
    ...target.status.map(() => 'text[]'),
    'timestamptz[]',
    ...(recordKnown ? ['text'] : []),
  ];
}

/**
 * The page write, one statement and so one transaction: the range's checkpoint moves
 * from the key the page was read after to its last key; a guarded `UPDATE … FROM unnest(…)` touches
 * only rows whose mapped columns still hold the values read (`IS NOT DISTINCT FROM`, so NULLs
 * compare too; old values cast to the column's type so `char(n)` padding compares as stored), and
 * only rows it changes: a row whose corrections are to be written, or (with status columns) whose
 * status columns would get another value than they hold (compared in the column's type; see
 * {@link statusChanges}); and
 * one results row per row of the page records its status, class, request id, candidates and, for
 * the rows updated, the audit's before and after values. If the checkpoint no longer stands where
 * the page was read from (another process took the range over), `range_taken` raises and nothing
 * of the page is kept. The key bounds let the planner use the key's index for the page's key range
 * whatever the table's size (see the EXPLAIN test).
 *
 * With `recordKnown`, rows are recorded in `dq_cleanse.known` under the scope given as the last
 * parameter ({@link KnownRows}): `corrected` (a cleanse) the rows whose corrections were written,
 * `decided` (a review run) every row that is not a conflict. A recorded row's results row keeps
 * `after` (the values the row was left with) even when it was not updated; `before` stays NULL
 * then, as the audit and rollback cover only the rows updated.
 *
 * With `skipLocked` (the page's second attempt, after its first waited too long for a row lock),
 * the rows to update are first locked with `FOR UPDATE SKIP LOCKED` and only those are updated: a
 * row another session holds (an open transaction that changed it, a `SELECT … FOR UPDATE`) is not
 * waited for but left as it is, a conflict like a row changed since it was read.
 *
 * Parameters: see {@link pageWriteParams}. Returns one row: `written` (count), `conflicts` (keys of
 * rows to update that were not: changed since they were read, or locked) and `locked` (those of
 * the conflicts another session held locked; always empty without `skipLocked`).
 */
export function pageWriteSql(target: TargetTable, recordKnown?: KnownRecording, skipLocked = false): string {
  const { key, qualified, columns } = target;
  const kt = key.type;
  const arrays = [`$6::${kt}[]`, '$7::bool[]', '$8::text[]', '$9::text[]', '$10::text[]', '$11::jsonb[]', '$12::jsonb[]', '$13::jsonb[]'];
  const names = ['k', 'w', 'status', 'class', 'rid', 'cand', 'detail', 'err'];
  const first = FIXED_TYPES.length + 1;
  columns.forEach((_, i) => {
    arrays.push(`$${first + 2 * i}::text[]`, `$${first + 1 + 2 * i}::text[]`);
    names.push(`o${i}`, `n${i}`);
  });
  const firstStatus = first + 2 * columns.length;
  target.status.forEach((_, i) => {
    arrays.push(`$${firstStatus + i}::text[]`);
    names.push(`s${i}`);
  });
  const guard = [
    ...columns.map((c, i) => holdsExactly(`t.${c.quoted}`, `v.o${i}`, c.type)),
    ...target.status.map((s, i) => holdsExactly(`t.${s.quoted}`, `v.s${i}`, s.type)),
  ].join(' AND ');
  // The answer's own check time (from the result store it is that of the call that bought it).
  const checked = `$${firstStatus + target.status.length}::timestamptz[]`;
  arrays.push(checked);
  names.push('chk');
  const statusValue: Record<string, string> = { status: 'v.status', class: 'v.class', requestId: 'v.rid', checkedAt: 'COALESCE(v.chk, $2)' };
  const withStatus = target.status.length > 0;
  // `nw`: the row is to be updated — its corrections are written, or a status column changes.
  // Only rows still holding the values read are (the guard); `wr` are the rows whose corrections
  // were written. A row with nothing to change is not touched: no UPDATE, no trigger, no audit.
  const needsWrite = withStatus ? `v.w OR ${statusChanges(target.status)}` : 'v.w';
  const set = [
    ...columns.map((c, i) =>
      withStatus ? `${c.quoted} = CASE WHEN v.w THEN COALESCE(v.n${i}, v.o${i}) ELSE t.${c.quoted} END` : `${c.quoted} = COALESCE(v.n${i}, v.o${i})`,
    ),
    ...target.status.map((s) => `${s.quoted} = ${statusValue[s.field]}`),
  ].join(', ');
  // text[] in the order of runs.columns (mapped, then status columns), not jsonb_build_object: see
  // bookkeeping.ts. Every row updated is audited, status columns included: a status column's new
  // value is the text of what the UPDATE stored (RETURNING shows the new row).
  const before = `ARRAY[${[...columns.map((_, i) => `v.o${i}`), ...target.status.map((_, i) => `v.s${i}`)].join(', ')}]::text[]`;
  // A mapped column's `after` is the value sent, unless the row's own trigger stored another (a
  // BEFORE UPDATE trigger that upper-cases, trims, …): then what the row holds, as RETURNING shows
  // it, so that the audit, the rollback's guard and the known rows match the row.
  const sent = (i: number): string => `COALESCE(v.n${i}, v.o${i})`;
  const stored = (c: (typeof columns)[number], i: number): string =>
    `CASE WHEN u.k IS NOT NULL AND NOT ${holdsExactly(`u.c${i}`, sent(i), c.type)} THEN u.c${i}::text ELSE ${sent(i)} END`;
  const after = `ARRAY[${[...columns.map((c, i) => stored(c, i)), ...target.status.map((_, i) => `u.s${i}`)].join(', ')}]::text[]`;
  // A conflict is a row that was to be updated and was not: it no longer held the values read.
  const conflictCount = '(SELECT count(*) FROM v WHERE v.nw) - (SELECT count(*) FROM upd)';
  const conflictRows = 'v.nw AND NOT EXISTS (SELECT 1 FROM upd WHERE upd.k = v.k)';
  const returned = [
    't.' + key.quoted + ' AS k',
    'v.w AS w',
    ...target.status.map((s, i) => `t.${s.quoted}::text AS s${i}`),
    ...columns.map((c, i) => `t.${c.quoted} AS c${i}`),
  ].join(', ');
  // The rows recorded as known, and the results rows that keep their `after` values.
  const recorded = recordKnown === 'decided' ? `NOT (${conflictRows})` : 'u.k IS NOT NULL';
  const knownRows = recordKnown === 'decided' ? `v LEFT JOIN upd u ON u.k = v.k WHERE ${recorded}` : 'wr';
  const knownKey = recordKnown === 'decided' ? 'v.k' : 'wr.k';
  // With `skipLocked`, the rows to update are locked first, skipping those another session holds
  // (`lk`); only rows locked here are updated, so the statement waits for no row of the table.
  const inRange = `t.${key.quoted} = v.k AND t.${key.quoted} >= $4::${kt} AND t.${key.quoted} <= $5::${kt}`;
  const lockFirst = skipLocked
    ? `
lk AS MATERIALIZED (SELECT t.${key.quoted} AS k FROM ${qualified} AS t JOIN v ON ${inRange} WHERE v.nw FOR UPDATE OF t SKIP LOCKED),`
    : '';
  const onlyLocked = skipLocked ? ` AND t.${key.quoted} IN (SELECT lk.k FROM lk)` : '';
  const lockedRows = skipLocked ? `ARRAY(SELECT v.k::text FROM v WHERE v.nw AND NOT EXISTS (SELECT 1 FROM lk WHERE lk.k = v.k))` : `'{}'::text[]`;
  return `WITH v AS (SELECT v.*, (${needsWrite}) AS nw FROM unnest(${arrays.join(', ')}) AS v(${names.join(', ')})),${lockFirst}
upd AS (
  UPDATE ${qualified} AS t SET ${set} FROM v
   WHERE v.nw AND ${inRange} AND ${guard}${onlyLocked}
  RETURNING ${returned}),
wr AS (SELECT k FROM upd WHERE w),
prog AS (
  UPDATE ${STATE_SCHEMA}.progress SET last_key = $16, done = $17, worker = $3, rows_read = rows_read + $18,
         written = written + (SELECT count(*) FROM wr),
         conflicts = conflicts + ${conflictCount},
         unchanged = unchanged + $19, accepted = accepted + $20, review = review + $21, invalid = invalid + $22,
         invalid_input = invalid_input + $23, unavailable = unavailable + $24, api_calls = api_calls + $25, updated_at = now()
   WHERE run_id = $1 AND range_no = $14 AND last_key IS NOT DISTINCT FROM $15 AND NOT done
  RETURNING 1),
res AS (
  INSERT INTO ${STATE_SCHEMA}.results (run_id, row_key, status, result_class, outcome, request_id, candidates, detail, error, checked_at, worker, before, after)
  SELECT $1, v.k::text, v.status, v.class,
         CASE WHEN u.w THEN 'written' WHEN v.nw AND u.k IS NULL THEN 'conflict' WHEN v.status = 'accepted' AND v.err IS NULL THEN 'unchanged' ELSE 'kept' END,
         v.rid, v.cand, v.detail, v.err, COALESCE(v.chk, $2), $3,
         CASE WHEN u.k IS NOT NULL THEN ${before} END, CASE WHEN ${recorded} THEN ${after} END
    FROM v LEFT JOIN upd u ON u.k = v.k)${
      recordKnown
        ? `,
kn AS (
  INSERT INTO ${STATE_SCHEMA}.known (scope, row_key, run_id) SELECT $${firstStatus + target.status.length + 1}::text, ${knownKey}::text, $1 FROM ${knownRows}
  ON CONFLICT (scope, row_key) DO UPDATE SET run_id = EXCLUDED.run_id)`
        : ''
    }
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM prog) THEN ${STATE_SCHEMA}.range_taken($1, $14) END AS taken,
       (SELECT count(*) FROM wr)::int AS written,
       ARRAY(SELECT v.k::text FROM v WHERE ${conflictRows}) AS conflicts,
       ${lockedRows} AS locked`;
}

/**
 * SQL (over the page's unnested row `v`): whether any status column would get another value than
 * the one read (`v.s<i>`, which the guard holds the row to), both compared in the column's type.
 * A check time counts only when the result has one of its own (an answer, from the platform or
 * the result store): a row refused by the local checks again, its status, class and request id
 * the same, keeps the time it was first refused at instead of being written for the clock alone;
 * an empty check-time column is filled.
 */
function statusChanges(status: TargetTable['status']): string {
  const value: Record<string, string> = { status: 'v.status', class: 'v.class', requestId: 'v.rid' };
  return status
    .map((s, i) => {
      const held = `v.s${i}::${s.type}`;
      if (s.field === 'checkedAt') return `(v.s${i} IS NULL OR (v.chk IS NOT NULL AND ${held} IS DISTINCT FROM v.chk::${s.type}))`;
      return `${held} IS DISTINCT FROM ${value[s.field]}::${s.type}`;
    })
    .join(' OR ');
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;

/**
 * A PostgreSQL array literal of text values (`{"a","say \"hi\"",NULL}`). Does what pg's generic
 * parameter conversion does for string arrays at a fraction of its cost; it runs for every value
 * of every page.
 */
export function textArrayLiteral(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i += 1) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else out += `"${NEEDS_ESCAPE.test(v) ? v.replace(ESCAPED, '\\$&') : v}"`;
  }
  return `${out}}`;
}

/**
 * {@link textArrayLiteral}, or null when every value is null: the page statement unnests its arrays
 * together, and `unnest` pads a NULL array with NULLs, so an all-NULL column of the page (candidates,
 * errors, the new values of a column nothing changed in) costs neither side any parsing.
 */
export function textArrayParam(values: readonly (string | null)[]): string | null {
  for (let i = 0; i < values.length; i += 1) if (values[i] !== null && values[i] !== undefined) return textArrayLiteral(values);
  return null;
}

function boolArrayLiteral(values: readonly boolean[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i += 1) out += i > 0 ? (values[i] ? ',t' : ',f') : values[i] ? 't' : 'f';
  return `${out}}`;
}

/** The parameters of {@link pageWriteSql} for one page (arrays as array literals). */
export function pageWriteParams(runId: string, worker: string, checkedAt: Date, page: PageWrite, checkpoint: PageCheckpoint, knownScope?: string): unknown[] {
  const k = checkpoint.counts;
  const params: unknown[] = [
    runId,
    checkedAt,
    worker,
    page.keys[0],
    page.keys[page.keys.length - 1],
    textArrayLiteral(page.keys),
    boolArrayLiteral(page.write),
    textArrayLiteral(page.status),
    textArrayParam(page.resultClass),
    textArrayParam(page.requestId),
    textArrayParam(page.candidates),
    textArrayParam(page.detail),
    textArrayParam(page.error),
    checkpoint.rangeNo,
    checkpoint.prevKey,
    checkpoint.lastKey,
    checkpoint.done,
    k.rowsRead,
    k.unchanged,
    k.accepted,
    k.review,
    k.invalid,
    k.invalidInput,
    k.unavailable,
    k.apiCalls,
  ];
  page.before.forEach((old, i) => params.push(textArrayParam(old), textArrayParam(page.after[i] ?? [])));
  for (const old of page.statusBefore ?? []) params.push(textArrayParam(old));
  params.push(textArrayParam(page.checkedAt ?? []));
  if (knownScope !== undefined) params.push(knownScope);
  return params;
}

/**
 * Reads pages and commits page writes with their checkpoint. Reads and writes may go to separate
 * connections, so that the next page is read while the previous one is being written.
 */
export class PageStore {
  readonly #reader: pg.Client;
  readonly #writer: pg.Client;
  readonly #target: TargetTable;
  readonly #where: string | undefined;
  readonly #writeSql: string;
  readonly #writeSkipLockedSql: string;
  readonly #lockWaitMs: number;
  readonly #readSql = new Map<string, string>();
  readonly #known: KnownRows | undefined;
  /** The partitioned table `#target` is a partition of, once a row was refused for leaving it ({@link partitionOf}). */
  #partition: Promise<PartitionOf | null> | undefined;

  /**
   * @param writer connection for {@link commit}; default `reader`.
   * @param known a cleanse run's known rows: recorded by its writes, reused by its reads ({@link KnownRows}).
   */
  constructor(reader: pg.Client, target: TargetTable, where: string | undefined, writer: pg.Client = reader, known?: KnownRows) {
    this.#reader = reader;
    this.#writer = writer;
    this.#target = target;
    this.#where = where;
    this.#known = known;
    const record = known === undefined ? undefined : (known.record ?? 'corrected');
    this.#writeSql = pageWriteSql(target, record);
    this.#writeSkipLockedSql = pageWriteSql(target, record, true);
    this.#lockWaitMs = lockWaitMs(writer);
  }

  /** Up to `limit` rows with keys in (`after`, `upTo`] (null bounds = open), in key order. */
  async read(after: string | null, upTo: string | null, limit: number): Promise<SourceRow[]> {
    const reuse = this.#known !== undefined && this.#known.maxAgeMs > 0;
    const variant = `${after !== null ? 'l' : ''}${upTo !== null ? 'u' : ''}${reuse ? 'k' : ''}`;
    let text = this.#readSql.get(variant);
    if (text === undefined) {
      text = pageReadSql(this.#target, this.#where, after !== null, upTo !== null, reuse);
      this.#readSql.set(variant, text);
    }
    const values: unknown[] = [];
    if (after !== null) values.push(after);
    if (upTo !== null) values.push(upTo);
    values.push(limit);
    if (reuse) {
      const { scope, scopeBefore, maxAgeMs } = this.#known!;
      values.push(scopeBefore === undefined ? [scope] : [scope, scopeBefore], new Date(Date.now() - maxAgeMs).toISOString());
    }
    let res: pg.QueryResult<unknown[]>;
    try {
      res = await this.#reader.query<unknown[]>({ name: `dq_read_${variant}`, text, values, rowMode: 'array' });
    } catch (e) {
      throw whereFailed(e, this.#where, this.#target);
    }
    const n = this.#target.columns.length + 1;
    const m = n + this.#target.status.length;
    return res.rows.map((r) => {
      const row: SourceRow = { key: r[0] as string, values: r.slice(1, n) as (string | null)[] };
      if (this.#target.status.length > 0) row.status = r.slice(n, m) as (string | null)[];
      if (reuse && r[m] !== null) {
        const [status, resultClass, requestId, checkedAt, candidates, detail] = r.slice(m, m + KNOWN_FIELDS) as [
          string,
          string | null,
          string | null,
          Date,
          string | null,
          string | null,
        ];
        row.known = { status, resultClass, requestId, checkedAt: checkedAt.toISOString(), candidates, detail };
      }
      return row;
    });
  }

  /**
   * Commits one page with its checkpoint ({@link pageWriteSql}), in a transaction that waits at most
   * a few seconds for a row lock ({@link lockWaitMs}): when a row of the page is held longer by
   * another session, the page is written again without waiting, leaving the rows held unwritten
   * (`locked`, counted among the `conflicts`). Returns `taken` when the range's checkpoint had moved
   * (another process took the range over): then nothing of the page was kept. A page without rows
   * only moves the checkpoint.
   */
  async commit(
    runId: string,
    worker: string,
    page: PageWrite | null,
    checkpoint: PageCheckpoint,
  ): Promise<{ taken: true } | { taken: false; written: number; conflicts: string[]; locked: string[]; refused: Refused[]; skipped: string[] }> {
    try {
      if (page === null || page.keys.length === 0) {
        const moved = await this.#writer.query({
          name: 'dq_checkpoint',
          text: `UPDATE ${STATE_SCHEMA}.progress SET last_key = $4, done = $5, worker = $6, updated_at = now()
                  WHERE run_id = $1 AND range_no = $2 AND last_key IS NOT DISTINCT FROM $3 AND NOT done`,
          values: [runId, checkpoint.rangeNo, checkpoint.prevKey, checkpoint.lastKey, checkpoint.done, worker],
        });
        return moved.rowCount === 0 ? { taken: true } : { taken: false, written: 0, conflicts: [], locked: [], refused: [], skipped: [] };
      }
      let res: pg.QueryResult<{ written: number; conflicts: string[]; locked: string[] }>;
      let refused: Refused[] = [];
      // Set once the page waited too long for a row another session holds: written again without waiting.
      const held = { skipLocked: false };
      try {
        res = await this.#writePage(pageWriteParams(runId, worker, new Date(), page, checkpoint, this.#known?.scope), held);
      } catch (e) {
        // The table refused a row's new values (a CHECK or unique constraint, a trigger, a value its
        // type rejects): those rows are found and left as they are, the page is written without them.
        // A review run's decisions are a person's: stopped there instead, naming the row.
        if (!refusedByTable(e) || this.#known?.record === 'decided') throw e;
        refused = await this.#refusedRows(page);
        if (refused.length === 0) throw e;
        res = await this.#writePage(pageWriteParams(runId, worker, new Date(), withoutRefused(page, refused), checkpoint, this.#known?.scope), held);
      }
      const row = res.rows[0];
      const conflicts = row?.conflicts ?? [];
      const locked = row?.locked ?? [];
      const skipped = await this.#skippedByTable(page, conflicts, locked);
      return { taken: false, written: row?.written ?? 0, conflicts, locked, refused, skipped };
    } catch (e) {
      // RANGE_TAKEN: the checkpoint moved; 23505 on the results table: another holder of the range
      // stored these rows' results — if the checkpoint moved, else this process would claim the
      // range again and find it "taken" for ever. A unique violation of the table being cleaned is
      // not that. Both 23505 and 21000 (two known rows for one key) also come from a key that no
      // longer identifies one row.
      const code = (e as { code?: string }).code;
      if (code === '23505' || code === CARDINALITY_VIOLATION) await this.#refuseDuplicateKeys(e, runId, page);
      if (code === RANGE_TAKEN) return { taken: true };
      if (code === '23505' && (e as { schema?: string }).schema === STATE_SCHEMA && (await this.#checkpointMoved(runId, checkpoint))) return { taken: true };
      if (code === LOCK_NOT_AVAILABLE) throw lockedOut(e, this.#target, this.#lockWaitMs, runId, page?.keys[0]);
      if (code === STRING_TOO_LONG && page !== null)
        throw statusTooShort(e, this.#target, page, runId) ?? writeRefused(e, this.#target, runId, page.keys[0], page.keys.at(-1));
      if (refusedByTable(e)) throw writeRefused(e, this.#target, runId, page?.keys[0], page?.keys.at(-1));
      throw e;
    }
  }

  /**
   * The conflicts of a committed page (not those another session held locked) that still hold
   * exactly the values read: no one changed them, the table itself left them out of the UPDATE —
   * a BEFORE UPDATE trigger that returns NULL, or a row-level security policy whose `USING` hides
   * them from UPDATE while SELECT sees them. Every run finds them so until that changes, so they are
   * named as such rather than as rows changed by someone else.
   */
  async #skippedByTable(page: PageWrite, conflicts: readonly string[], locked: readonly string[]): Promise<string[]> {
    const held = new Set(locked);
    const index = new Map(page.keys.map((k, i) => [k, i]));
    const rows = conflicts.filter((k) => !held.has(k) && index.has(k)).map((k) => index.get(k) as number);
    if (rows.length === 0) return [];
    const { key, qualified, columns, status } = this.#target;
    const olds = [...page.before, ...(page.statusBefore ?? [])];
    const names = [...columns.map((_, i) => `o${i}`), ...status.map((_, i) => `s${i}`)];
    const arrays = [`$1::${key.type}[]`, ...names.map((_, i) => `$${i + 2}::text[]`)];
    const guard = [
      ...columns.map((c, i) => holdsExactly(`t.${c.quoted}`, `v.o${i}`, c.type)),
      ...status.map((s, i) => holdsExactly(`t.${s.quoted}`, `v.s${i}`, s.type)),
    ];
    const { rows: same } = await this.#writer.query<{ k: string }>(
      `SELECT v.k::text AS k FROM unnest(${arrays.join(', ')}) AS v(k${names.map((n) => `, ${n}`).join('')})
         JOIN ${qualified} AS t ON t.${key.quoted} = v.k WHERE ${guard.join(' AND ')} ORDER BY t.${key.quoted}`,
      [textArrayLiteral(rows.map((i) => page.keys[i] as string)), ...olds.map((old) => textArrayLiteral(rows.map((i) => old[i] ?? null)))],
    );
    return same.map((r) => r.k);
  }

  /** Whether the range's checkpoint no longer stands where the page was read from (another process wrote it since). */
  async #checkpointMoved(runId: string, checkpoint: PageCheckpoint): Promise<boolean> {
    const { rows } = await this.#writer.query<{ stands: boolean }>(
      `SELECT last_key IS NOT DISTINCT FROM $3 AND NOT done AS stands FROM ${STATE_SCHEMA}.progress WHERE run_id = $1 AND range_no = $2`,
      [runId, checkpoint.rangeNo, checkpoint.prevKey],
    );
    return rows[0]?.stands !== true;
  }

  /**
   * Throws `key-not-unique` when a key of `page` is held by more than one row of the table: its
   * primary key or unique index, checked by the pre-flight, was dropped during the run and rows
   * with the same key came in. The page write addresses rows by key and cannot tell them apart.
   */
  async #refuseDuplicateKeys(e: unknown, runId: string, page: PageWrite | null): Promise<void> {
    if (page === null || page.keys.length === 0) return;
    const { key, qualified } = this.#target;
    const { rows } = await this.#writer.query<{ k: string }>(
      `SELECT ${key.quoted}::text AS k FROM ${qualified} WHERE ${key.quoted} >= $1::${key.type} AND ${key.quoted} <= $2::${key.type}
        GROUP BY ${key.quoted} HAVING count(*) > 1 ORDER BY ${key.quoted} LIMIT 5`,
      [page.keys[0], page.keys.at(-1)],
    );
    if (rows.length === 0) return;
    throw new CleanseError(
      'key-not-unique',
      `--key: column "${key.column}" of ${qualified} no longer identifies one row: ${rows.map((r) => JSON.stringify(r.k)).join(', ')} ${rows.length > 1 ? 'are each' : 'is'} the key of more than one row (was its primary key or unique index dropped while dq-pg worked on it?); dq-pg writes a row by its key and cannot tell those rows apart, so nothing of the page from key ${page.keys[0]} was written. Make the key unique again (remove or re-key the duplicate rows, then ALTER TABLE ${qualified} ADD PRIMARY KEY (${key.quoted}), or a unique index), then rerun with --run-id ${runId}: the run keeps what it committed`,
      { cause: e },
    );
  }

  /**
   * The page statement; when a row of the page is held by another session, again without it (and
   * without waiting), and so at once on a later attempt of the same page (`held.skipLocked`).
   */
  async #writePage(values: unknown[], held: { skipLocked: boolean }): Promise<pg.QueryResult<{ written: number; conflicts: string[]; locked: string[] }>> {
    const skipLocked = () => this.#inLockWait(() => this.#writer.query({ name: 'dq_write_skip_locked', text: this.#writeSkipLockedSql, values }));
    if (held.skipLocked) return skipLocked();
    try {
      return await this.#inLockWait(() => this.#writer.query({ name: 'dq_write', text: this.#writeSql, values }));
    } catch (e) {
      // A deadlock with another session's transaction (it waits for a row this page updated while
      // this page waits for one it holds): this page was chosen to give way, rolled back, and is
      // written like one that waited too long, without the rows held (README "dq-pg").
      const code = (e as { code?: string }).code;
      if (code !== LOCK_NOT_AVAILABLE && code !== DEADLOCK_DETECTED) throw e;
      held.skipLocked = true;
      return skipLocked();
    }
  }

  /**
   * The rows of `page` whose new values the table refuses: each row to write is updated on its own
   * under a savepoint, in key order (so of two rows corrected into one unique value, the second is
   * refused), in a transaction that is rolled back. A row another session holds is not waited for:
   * it is skipped (the page's write leaves it as a conflict).
   */
  async #refusedRows(page: PageWrite): Promise<Refused[]> {
    const { key, qualified, columns } = this.#target;
    const set = columns.map((c, i) => `${c.quoted} = COALESCE($${i + 2}, ${c.quoted})`).join(', ');
    const text = `UPDATE ${qualified} SET ${set} WHERE ${key.quoted} = $1::${key.type}
                    AND ${key.quoted} IN (SELECT ${key.quoted} FROM ${qualified} WHERE ${key.quoted} = $1::${key.type} FOR UPDATE SKIP LOCKED)`;
    const refused: Refused[] = [];
    const q = (sql: string): Promise<unknown> => this.#writer.query(sql);
    await q(writeTransaction(this.#lockWaitMs));
    try {
      for (let i = 0; i < page.keys.length; i += 1) {
        if (!page.write[i]) continue;
        await q('SAVEPOINT dq_probe');
        try {
          await this.#writer.query({ name: 'dq_probe', text, values: [page.keys[i], ...columns.map((_, c) => page.after[c]?.[i] ?? null)] });
          await q('RELEASE SAVEPOINT dq_probe');
        } catch (e) {
          if (isConnectionLoss(e)) throw e;
          await q('ROLLBACK TO SAVEPOINT dq_probe');
          if (refusedByTable(e)) refused.push({ key: page.keys[i] as string, index: i, reason: (await this.#leavesPartition(e, page, i)) ?? refusalText(e) });
        }
      }
    } finally {
      await q('ROLLBACK').catch(() => undefined);
    }
    return refused;
  }

  /**
   * Why row `i` of `page` was refused when its correction would move it out of the partition
   * `#target` is (the corrected value of a partition key column belongs in another partition):
   * PostgreSQL moves a row only between the partitions under the table the UPDATE names (its
   * manual, "Table Partitioning"), so an UPDATE of a partition fails with "violates partition
   * constraint". Names the partition key's columns and the statement that moves the row through the
   * partitioned table; undefined for another refusal.
   */
  async #leavesPartition(e: unknown, page: PageWrite, i: number): Promise<string | undefined> {
    const { code, message } = e as { code?: string; message?: string };
    if (code !== CHECK_VIOLATION || !message?.endsWith('violates partition constraint')) return undefined;
    this.#partition ??= partitionOf(this.#writer, this.#target.qualified);
    const part = await this.#partition;
    if (!part) return undefined;
    const { key, qualified, columns } = this.#target;
    const moved = columns
      .map((c, n) => ({ c, value: page.after[n]?.[i] ?? null, before: page.before[n]?.[i] ?? null }))
      .filter(({ c, value, before }) => value !== null && value !== before && part.columns.includes(c.column));
    const set = moved.map(({ c, value }) => `${c.quoted} = ${this.#writer.escapeLiteral(value as string)}`).join(', ');
    const names = moved.length > 0 ? moved.map(({ c }) => c.column).join(', ') : part.columns.join(', ');
    return (
      `its corrected ${names} belongs in another partition of ${part.root} (PARTITION BY ${part.key}): ${qualified} takes only rows where ${part.bound}, and PostgreSQL moves a row to another partition only in an UPDATE of the partitioned table, not of the partition (${message}, SQLSTATE ${code})` +
      `; to correct it, move it through ${part.root} (${set ? `UPDATE ${part.root} SET ${set} WHERE ${key.quoted} = ${this.#writer.escapeLiteral(page.keys[i] as string)}` : `an UPDATE of ${names}`}) and clean the partition it lands in`
    );
  }

  /**
   * Runs `write` in a transaction whose lock waits end after {@link lockWaitMs} (SQLSTATE 55P03),
   * committed when it returns. When the server answered with an error the transaction is rolled
   * back; a lost connection is left to its caller (nothing was committed, and a ROLLBACK on a
   * frozen server would only wait out another query timeout).
   */
  async #inLockWait<T>(write: () => Promise<T>): Promise<T> {
    await this.#writer.query(writeTransaction(this.#lockWaitMs));
    try {
      const out = await write();
      await this.#writer.query('COMMIT');
      return out;
    } catch (e) {
      if (!isConnectionLoss(e)) await this.#writer.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }
}

/** The partitioned table a table is a partition of: its root, the root's partition key, the partition's bound, the key columns of every level. */
interface PartitionOf {
  /** Quoted `"schema"."table"` of the topmost partitioned table. */
  root: string;
  /** Its partition key as `pg_get_partkeydef` prints it, e.g. `LIST (country)`. */
  key: string;
  /** The partition's constraint (its bounds and its ancestors'), as `pg_get_partition_constraintdef` prints it. */
  bound: string;
  /** Columns of the partition keys above the partition (by name: a partition has its parent's column names). */
  columns: string[];
}

/**
 * The partitioned table `qualified` is a partition of, or null for a table that is none. The
 * columns of the partition keys: plain key columns, and columns an expression key names.
 */
async function partitionOf(client: pg.Client, qualified: string): Promise<PartitionOf | null> {
  const { rows } = await client.query<{ schema: string; table: string; key: string; bound: string; columns: string[]; exprs: string[]; names: string[] }>(
    `SELECT n.nspname AS schema, r.relname AS table, pg_get_partkeydef(r.oid) AS key,
            pg_get_partition_constraintdef($1::regclass) AS bound,
            ARRAY(SELECT a.attname::text FROM pg_partition_ancestors($1::regclass) anc JOIN pg_partitioned_table p ON p.partrelid = anc.relid
                    JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = ANY (p.partattrs::int2[])) AS columns,
            ARRAY(SELECT pg_get_expr(p.partexprs, p.partrelid) FROM pg_partition_ancestors($1::regclass) anc
                    JOIN pg_partitioned_table p ON p.partrelid = anc.relid WHERE p.partexprs IS NOT NULL) AS exprs,
            ARRAY(SELECT attname::text FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped) AS names
       FROM pg_class c JOIN pg_class r ON r.oid = pg_partition_root(c.oid) JOIN pg_namespace n ON n.oid = r.relnamespace
      WHERE c.oid = $1::regclass AND c.relispartition`,
    [qualified],
  );
  const row = rows[0];
  if (!row) return null;
  // The identifiers of the expression keys (as PostgreSQL prints them: quoted where they need it).
  const identifiers = new Set(row.exprs.flatMap((x) => [...x.matchAll(/"((?:[^"]|"")+)"|([a-z_][a-z0-9_$]*)/g)].map((m) => m[1]?.replace(/""/g, '"') ?? m[2])));
  const columns = row.names.filter((name) => row.columns.includes(name) || identifiers.has(name));
  return { root: `${quoteIdent(row.schema)}.${quoteIdent(row.table)}`, key: row.key, bound: row.bound, columns };
}

/** SQLSTATE check_violation: a CHECK constraint, or a row outside its partition's bounds. */
const CHECK_VIOLATION = '23514';

/** A row of a page the table refused to take its new values: its key, its index in the page and why. */
export interface Refused {
  key: string;
  index: number;
  reason: string;
}

/**
 * Whether the table refused the new values (not the database failing): a data exception (class
 * 22, e.g. a value its type rejects), an integrity constraint (class 23: CHECK, unique, NOT NULL,
 * foreign key, exclusion), an exception raised by a trigger (P0001, or an error code of the
 * application's own, of a class PostgreSQL does not define), or a row-level security
 * policy's `WITH CHECK` (42501, "new row violates row-level security policy"; a missing privilege,
 * also 42501, is not a refusal of the row). Never the bookkeeping's own.
 */
export function refusedByTable(e: unknown): boolean {
  const { code, schema, message } = e as { code?: unknown; schema?: unknown; message?: unknown };
  if (typeof code !== 'string' || schema === STATE_SCHEMA) return false;
  if (code === '42501') return typeof message === 'string' && ROW_SECURITY_REFUSAL.test(message);
  return code.startsWith('22') || code.startsWith('23') || code === 'P0001' || userDefined(code);
}

/**
 * The SQLSTATE classes PostgreSQL defines (Appendix A of its manual): connection, transaction,
 * lock, resource, system and internal errors among them. A code of another class (`U0001`, say)
 * can only come from an application's `RAISE … USING ERRCODE`, in a trigger that checks the row.
 */
const POSTGRES_CLASSES = new Set(
  '00 01 02 03 08 09 0A 0B 0F 0L 0P 0Z 20 21 22 23 24 25 26 27 28 2B 2D 2F 34 38 39 3B 3D 3F 40 42 44 53 54 55 57 58 72 F0 HV P0 XX'.split(' '),
);

/** Whether `code` is an SQLSTATE of a class PostgreSQL does not define: one an application raised. */
function userDefined(code: string): boolean {
  return /^[0-9A-Z]{5}$/.test(code) && !POSTGRES_CLASSES.has(code.slice(0, 2));
}

/** PostgreSQL's message when a row-level security policy refuses the new row of an UPDATE. */
const ROW_SECURITY_REFUSAL = /^new row violates row-level security policy/;

/**
 * The page read failed on a row because of `--where` (a cast or function of the predicate that a
 * row's value breaks: a data exception, class 22, or an exception a function raised, P0001): a
 * {@link CleanseError} (`where-invalid`, exit 2) naming `--where` and the database's message. The
 * read's own SQL casts nothing that a row could break; other errors are returned unchanged.
 */
function whereFailed(e: unknown, where: string | undefined, target: TargetTable): unknown {
  const { code, message } = e as { code?: unknown; message?: unknown };
  if (where === undefined || typeof code !== 'string' || !(code.startsWith('22') || code === 'P0001')) return e;
  return new CleanseError(
    'where-invalid',
    `--where ${JSON.stringify(where)} failed on a row of ${target.qualified}: ${String(message)} (SQLSTATE ${code}); change the predicate so that it holds for every row (e.g. test a value before casting it) and start a new run with it (a run keeps the --where it began with)`,
    { cause: e },
  );
}

/** PostgreSQL's reason, with the constraint it names; not its detail (which may quote the whole row). */
export function refusalText(e: unknown): string {
  const { code, message, constraint } = e as { code?: string; message?: string; constraint?: string };
  return `${message ?? 'refused'} (SQLSTATE ${code ?? '?'}${constraint ? `, constraint ${constraint}` : ''})`;
}

/** `page` with the refused rows not written: each keeps its values, its results row says why (`write-refused`). */
function withoutRefused(page: PageWrite, refused: readonly Refused[]): PageWrite {
  const write = [...page.write];
  const error = [...page.error];
  const after = page.after.map((a) => [...a]);
  for (const r of refused) {
    write[r.index] = false;
    for (const a of after) a[r.index] = null;
    error[r.index] = JSON.stringify({
      code: 'write-refused',
      message: `the table refused this row's corrected values: ${r.reason}; the row was not written`,
    });
  }
  return { ...page, write, error, after };
}

/** SQLSTATE string_data_right_truncation: a value longer than its `varchar(n)`/`char(n)` column. */
const STRING_TOO_LONG = '22001';

/**
 * The page's statement failed with a value too long for its column, and a status column is too
 * short for a value of the page (a request id: its length is the platform's, so the pre-flight
 * checks only the status, class and check time; README "Status columns in the table"): a
 * `column-type` error naming that column, the row and what to do, instead of PostgreSQL's message,
 * which names no column. Undefined when no status column is too short for the page.
 */
function statusTooShort(e: unknown, target: TargetTable, page: PageWrite, runId: string): CleanseError | undefined {
  const values: Partial<Record<StatusColumn['field'], readonly (string | null)[]>> = {
    status: page.status,
    class: page.resultClass,
    requestId: page.requestId,
  };
  for (const s of target.status) {
    const max = s.maxLength;
    const held = values[s.field];
    if (max === undefined || held === undefined) continue;
    const i = held.findIndex((v) => v !== null && [...v.replace(/ +$/u, '')].length > max);
    if (i < 0) continue;
    const value = held[i] as string;
    return new CleanseError(
      'column-type',
      `--status-columns ${s.field}: column ${s.quoted} of ${target.qualified} is ${s.type}, too short for the ${s.field} of the row with key ${page.keys[i]} (${[...value].length} characters: ${JSON.stringify(value)}); nothing of the page from key ${page.keys[0]} was written. Widen it (ALTER TABLE ${target.qualified} ALTER COLUMN ${s.quoted} TYPE text), then rerun with --run-id ${runId}: the answers bought are in the result store`,
      { cause: e },
    );
  }
  return undefined;
}

/**
 * The table refused a page's values even without the rows found refusing them one by one (or in a
 * review apply, where a person's decision is never left out silently): the run stops, naming the
 * page and the reason. Exit 2: rerunning changes nothing until the table or the data is changed.
 */
function writeRefused(e: unknown, target: TargetTable, runId: string, firstKey: string | undefined, lastKey: string | undefined): CleanseError {
  const page = firstKey === undefined ? '' : ` the page of keys ${firstKey} to ${lastKey ?? firstKey}:`;
  return new CleanseError(
    'write-refused',
    `${target.qualified} refused${page} ${refusalText(e)}; nothing of that page was written. Change the constraint, trigger or row (or leave the row out with --where), then rerun with --run-id ${runId}`,
    { cause: e },
  );
}

/**
 * Starts a transaction that writes the table: its lock waits end after `lockWaitMs` (SQLSTATE
 * 55P03), and its constraints are checked at the end of each statement, deferred ones too
 * (DEFERRABLE INITIALLY DEFERRED unique and foreign keys, constraint triggers): a row the table
 * refuses then fails the statement that writes it, where the one-row probes find it, instead of the
 * COMMIT, which names no row.
 */
export function writeTransaction(lockWaitMs: number): string {
  return `BEGIN; SET LOCAL lock_timeout = ${lockWaitMs}; SET CONSTRAINTS ALL IMMEDIATE`;
}

/** SQLSTATE lock_not_available: a lock wait passed `lock_timeout` (or a NOWAIT found the lock held). */
const LOCK_NOT_AVAILABLE = '55P03';
/** SQLSTATE cardinality_violation: an `INSERT … ON CONFLICT DO UPDATE` met the same key twice. */
const CARDINALITY_VIOLATION = '21000';
/** SQLSTATE deadlock_detected: this transaction was rolled back to end a deadlock. */
const DEADLOCK_DETECTED = '40P01';
/** Longest wait of a page write for a row lock another session holds. */
const LOCK_WAIT_MS = 5_000;

/**
 * How long a page write on `client` waits for a lock: 5 s, and at most a quarter of the
 * connection's query timeout (`?query_timeout=` in the URL may shorten it), so that a row held by
 * another session is never mistaken for a database that stopped answering.
 */
export function lockWaitMs(client: pg.Client): number {
  const queryTimeout = Number((client as unknown as { connectionParameters?: { query_timeout?: unknown } }).connectionParameters?.query_timeout);
  return Number.isFinite(queryTimeout) && queryTimeout > 0 ? Math.max(50, Math.min(LOCK_WAIT_MS, Math.floor(queryTimeout / 4))) : LOCK_WAIT_MS;
}

/**
 * The page write still waited too long for a lock after leaving out the rows other sessions hold:
 * a lock on the table itself (an `ALTER TABLE`, a `LOCK TABLE`, a trigger's). Exit 75: the run keeps
 * what it committed and resumes where it stopped.
 */
function lockedOut(e: unknown, target: TargetTable, waitMs: number, runId: string, firstKey: string | undefined): CleanseError {
  const page = firstKey === undefined ? '' : ` while writing the page from key ${firstKey}`;
  return new CleanseError(
    'db-locked',
    `${target.qualified} (or an object its update needs) stayed locked by another session for more than ${waitMs} ms${page}` +
      ` (pg_locks names the session holding it); the run keeps what it committed: rerun with --run-id ${runId} once the lock is released`,
    { cause: e },
  );
}
