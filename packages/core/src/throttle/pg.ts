import pg from 'pg';
import { DqError } from '../errors/index.js';
import { ENDPOINT_IDS, resolveThrottleOptions } from './limits.js';
import type { ThrottleOptions } from './limits.js';
import { sleep } from './sleep.js';
import type { EndpointId, Throttle } from './types.js';

/** Options of {@link createPgThrottle}: where the shared state lives, and the usual throttle options. */
export interface PgThrottleOptions extends ThrottleOptions {
  /** A pool to use (not closed by `close()`); or give `connectionString`. */
  pool?: pg.Pool;
  /** Used when no `pool` is given; the throttle then owns (and closes) a pool of 2 connections. */
  connectionString?: string;
  /** The platform account whose limits are shared; every process of that account passes the same value. */
  account: string;
  /** Table holding one row per (account, endpoint); created if missing. Default `dq_throttle`. */
  table?: string;
  /** Most slots reserved in one round trip, for callers already waiting. Default 8. */
  maxBatch?: number;
  /**
   * Slots are reserved at most this far ahead (ms; a round trip's batch may reach `maxBatch`
   * intervals further). Default 300: a request sent late is answered, and its answer moves the
   * slot a second's worth later (see `answered`), before any process has reserved that slot.
   */
  horizonMs?: number;
}

/** A {@link Throttle} whose budget is shared by every process using the same table and account. */
export interface PgThrottle extends Throttle {
  /** Waits for pending backoff writes and closes the pool if the throttle created it. */
  close(): Promise<void>;
}

interface Waiter {
  resolve(ticket: number): void;
  reject(err: unknown): void;
  signal: AbortSignal | undefined;
  /** How often this waiter woke too late and queued again. */
  stale: number;
}

/** A waiter woken late takes a fresh slot at most this many times, so a busy process is not starved. */
const MAX_STALE_RETRIES = 3;
/** How often the database clock offset is measured again, in ms. */
const CLOCK_SYNC_MS = 60_000;
const NOW_US = '(extract(epoch FROM clock_timestamp()) * 1000000)::bigint';
/** An endpoint with no slot taken for this long (µs) starts cold (see `coldStartGapMs`). */
const IDLE_US = 1_000_000;
const SECOND_US = 1_000_000;
/** Clock granularity between the platform's arrival stamp and our reading of the answer, µs. */
const ANSWER_GUARD_US = 1_000;
/** Tickets whose send time is remembered for `answered` (more than any process keeps in flight). */
const TICKET_RING = 1 << 14;

/**
 * A GCRA limiter whose theoretical arrival time lives in Postgres, so several processes of one
 * account share the contract's per-account limits. Each round trip is one atomic upsert that
 * reserves a slot for every caller waiting in this process (up to `maxBatch`); the database clock
 * is the common time base, and each caller then sleeps locally until its slot. All processes must
 * use the same limits. Same defaults as `createSharedThrottle`.
 */
export async function createPgThrottle(options: PgThrottleOptions): Promise<PgThrottle> {
  const o = resolveThrottleOptions(options);
  const table = options.table ?? 'dq_throttle';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) {
    throw new RangeError(`createPgThrottle: table must be a lower-case SQL identifier; got ${JSON.stringify(table)}`);
  }
  if (!options.account) throw new RangeError('createPgThrottle: account is required');
  const maxBatch = options.maxBatch ?? 8;
  const horizonUs = Math.round((options.horizonMs ?? 300) * 1000);
  if (!(horizonUs >= 0 && horizonUs < SECOND_US)) throw new RangeError(`createPgThrottle: horizonMs must be from 0 to 999; got ${options.horizonMs}`);
  // A waiter woken this late sends all the same: its answer comes, and moves the later slots back,
  // before those slots are reserved (they are a second's worth later, and reserved `horizon` ahead).
  const lateMs = (SECOND_US - horizonUs) / 2000;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`createPgThrottle: maxBatch must be an integer ≥ 1; got ${maxBatch}`);
  const owned = options.pool === undefined;
  const pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString, max: 2 });
  await ensureTable(pool, table);

  const recoveryPerUs = o.recoveryPerSecond / 1e6;
  // An endpoint idle for a second starts cold: its first slot is now, the next ones `gap_us` later.
  const reserveSql = `
    WITH c AS MATERIALIZED (SELECT ${NOW_US} AS now_us)
    INSERT INTO ${table} AS t (account, endpoint, tat_us, factor, factor_at_us, gap_us, seq)
    SELECT $1, $2, c.now_us + round($3::int * $4::float8)::bigint + $6::bigint, 1, 0, $6::bigint, $3::int FROM c
    ON CONFLICT (account, endpoint) DO UPDATE SET
      seq = t.seq + $3::int,
      gap_us = CASE WHEN t.tat_us < (SELECT now_us FROM c) - ${IDLE_US} THEN $6::bigint ELSE 0 END,
      tat_us = greatest(t.tat_us, (SELECT now_us FROM c))
        + round($3::int * $4::float8 / least(1.0, t.factor + $5::float8 * ((SELECT now_us FROM c) - t.factor_at_us)))::bigint
        + CASE WHEN t.tat_us < (SELECT now_us FROM c) - ${IDLE_US} THEN $6::bigint ELSE 0 END
    WHERE t.tat_us < (SELECT now_us FROM c) + $7::bigint
    RETURNING t.tat_us::text AS tat_us, (SELECT now_us FROM c)::text AS now_us, t.gap_us::text AS gap_us, t.seq::text AS seq,
      least(1.0, t.factor + $5::float8 * ((SELECT now_us FROM c) - t.factor_at_us))::float8 AS factor`;
  const backoffSql = `
    WITH c AS MATERIALIZED (SELECT ${NOW_US} AS now_us)
    INSERT INTO ${table} AS t (account, endpoint, tat_us, factor, factor_at_us)
    SELECT $1, $2, c.now_us + $7::bigint, greatest($4::float8, $3::float8), c.now_us FROM c
    ON CONFLICT (account, endpoint) DO UPDATE SET
      factor = CASE WHEN (SELECT now_us FROM c) - t.factor_at_us < $6::bigint THEN t.factor
        ELSE greatest($4::float8, $3::float8 * least(1.0, t.factor + $5::float8 * ((SELECT now_us FROM c) - t.factor_at_us))) END,
      factor_at_us = CASE WHEN (SELECT now_us FROM c) - t.factor_at_us < $6::bigint THEN t.factor_at_us
        ELSE (SELECT now_us FROM c) END,
      tat_us = greatest(t.tat_us, (SELECT now_us FROM c) + $7::bigint)`;
  // An answer came late (see `answered`): the slot `window` tickets after the answered one must be a
  // second after the answer. $3 ticket, $4 window, $5 the answer's time (database clock, µs), $6 interval.
  const answeredSql = `
    UPDATE ${table} AS t SET tat_us = greatest(t.tat_us, $5::bigint + ${SECOND_US + ANSWER_GUARD_US} - ($4::bigint - (t.seq - $3::bigint)) * $6::bigint)
    WHERE t.account = $1 AND t.endpoint = $2 AND t.seq - $3::bigint <= $4::bigint`;

  // Offset between the database clock and performance.now(), from the quickest of a few pings, so a
  // slot's local time does not depend on how late this process got round to reading the answer.
  let offsetMs = 0;
  let syncedAt = -Infinity;
  async function syncClock(): Promise<void> {
    let best = Infinity;
    for (let i = 0; i < 5; i++) {
      const sent = performance.now();
      const res = await pool.query<{ now_us: string }>(`SELECT ${NOW_US}::text AS now_us`);
      const received = performance.now();
      if (received - sent < best && res.rows[0]) {
        best = received - sent;
        offsetMs = Number(res.rows[0].now_us) / 1000 - (sent + received) / 2;
      }
    }
    syncedAt = performance.now();
  }
  await syncClock();

  const queues = new Map<EndpointId, { waiters: Waiter[]; busy: boolean }>();
  /** Local send time (ms) and interval (µs) of recent tickets, by ticket modulo the ring's size. */
  const sent = { ticket: new Float64Array(TICKET_RING).fill(-1), slotMs: new Float64Array(TICKET_RING), intervalUs: new Float64Array(TICKET_RING) };
  const pending = new Set<Promise<unknown>>();

  const queue = (endpoint: EndpointId): { waiters: Waiter[]; busy: boolean } => {
    let q = queues.get(endpoint);
    if (!q) queues.set(endpoint, (q = { waiters: [], busy: false }));
    return q;
  };
  const intervalUs = (endpoint: EndpointId): number => 1e6 / (o.limits[endpoint] * (1 - o.margin));

  async function pump(endpoint: EndpointId): Promise<void> {
    const q = queues.get(endpoint);
    if (!q || q.busy) return;
    const batch = q.waiters.splice(0, maxBatch).filter((w) => {
      if (!w.signal?.aborted) return true;
      w.reject(w.signal.reason);
      return false;
    });
    if (batch.length === 0) return;
    q.busy = true;
    try {
      if (performance.now() - syncedAt > CLOCK_SYNC_MS) await syncClock();
      const base = intervalUs(endpoint);
      const res = await pool.query<{ tat_us: string; now_us: string; gap_us: string; seq: string; factor: number }>(reserveSql, [
        options.account,
        endpoint,
        batch.length,
        base,
        recoveryPerUs,
        Math.round(o.coldStartGapMs * 1000),
        horizonUs,
      ]);
      const row = res.rows[0];
      if (!row) {
        // Every slot up to the horizon is taken: wait until the next free one is within it.
        q.waiters.unshift(...batch);
        const ahead = await pool.query<{ ahead_us: string }>(
          `SELECT (tat_us - ${NOW_US})::text AS ahead_us FROM ${table} WHERE account = $1 AND endpoint = $2`,
          [options.account, endpoint],
        );
        const waitMs = (Number(ahead.rows[0]?.ahead_us ?? 0) - horizonUs) / 1000;
        if (waitMs > 0) await sleep(Math.ceil(waitMs));
      } else {
        const interval = base / row.factor;
        const gapUs = Number(row.gap_us);
        const firstUs = Number(BigInt(row.tat_us)) - Math.round(batch.length * interval) - gapUs;
        const toleranceUs = (o.burst - 1) * interval;
        const firstTicket = Number(row.seq) - batch.length;
        const now = performance.now();
        batch.forEach((w, k) => {
          const slotLocalMs = (firstUs + k * interval + (k > 0 ? gapUs : 0) - toleranceUs) / 1000 - offsetMs;
          sleep(Math.max(0, Math.ceil(slotLocalMs - now)), w.signal).then(() => {
            // Woken very late (a stalled event loop): take a fresh slot rather than send a request whose
            // answer might come after the slot a second's worth later was reserved.
            if (performance.now() - slotLocalMs > lateMs && w.stale < MAX_STALE_RETRIES) {
              w.stale++;
              queue(endpoint).waiters.unshift(w);
              void pump(endpoint);
            } else {
              const ticket = firstTicket + k;
              const i = ticket % TICKET_RING;
              sent.ticket[i] = ticket;
              sent.slotMs[i] = slotLocalMs;
              sent.intervalUs[i] = interval;
              w.resolve(ticket);
            }
          }, w.reject);
        });
      }
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      const failure = new DqError(
        `throttle: the Postgres rate store failed${typeof code === 'string' ? ` (${code})` : ''}; check that the database is reachable`,
        { code: 'throttle-store-failed', retriable: true, cause: err },
      );
      q.waiters = q.waiters.filter((w) => !batch.includes(w));
      for (const w of batch) w.reject(failure);
    } finally {
      q.busy = false;
    }
    void pump(endpoint);
  }

  return {
    acquire(endpoint, signal) {
      if (!ENDPOINT_IDS.includes(endpoint)) return Promise.reject(new RangeError(`throttle: unknown endpoint ${JSON.stringify(endpoint)}`));
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (o.limits[endpoint] <= 0) return Promise.resolve();
      return new Promise<number>((resolve, reject) => {
        queue(endpoint).waiters.push({ resolve, reject, signal, stale: 0 });
        void pump(endpoint);
      });
    },
    answered(endpoint, ticket) {
      if (typeof ticket !== 'number') return;
      const i = ticket % TICKET_RING;
      if (sent.ticket[i] !== ticket) return;
      sent.ticket[i] = -1;
      // The platform counted this request at some moment before now, so the slot a second's worth
      // of tickets later (whichever process holds it) must be at least a second from now. Pacing
      // below the limit normally leaves it further away than that; only a late answer (a late send,
      // a slow network, a stalled platform) costs a round trip, which moves the slots not yet
      // handed out back by the difference.
      const window = Math.max(1, Math.floor(o.limits[endpoint]));
      const intervalUs = sent.intervalUs[i] as number;
      const now = performance.now();
      if ((sent.slotMs[i] as number) + (window * intervalUs) / 1000 >= now + (SECOND_US + ANSWER_GUARD_US) / 1000) return;
      const p = pool
        .query(answeredSql, [options.account, endpoint, ticket, window, Math.round((now + offsetMs) * 1000), Math.round(intervalUs)])
        // A lost write only means later slots stay where the margin put them.
        .catch(() => undefined);
      pending.add(p);
      void p.finally(() => pending.delete(p));
    },
    backoff(endpoint, retryAfterMs) {
      const p = pool
        .query(backoffSql, [
          options.account,
          endpoint,
          o.decrease,
          o.floor,
          recoveryPerUs,
          Math.round(o.decreaseCooldownMs * 1000),
          Math.round(Math.min(o.maxHoldMs, Math.max(0, retryAfterMs ?? 0)) * 1000),
        ])
        // A lost backoff write only means the shared rate stays higher; the caller's retry still waits.
        .catch(() => undefined);
      pending.add(p);
      void p.finally(() => pending.delete(p));
    },
    async close() {
      await Promise.all(pending);
      if (owned) await pool.end();
    },
  };
}

/**
 * Creates the shared budget's table (default `dq_throttle`) if it is missing or lacks a column of
 * this version; sends no DDL when it is there, so a role with only SELECT, INSERT, UPDATE on it can
 * use it. `dq-pg init` calls it as the database owner.
 */
export async function ensureThrottleTable(pool: Pick<pg.Pool, 'query'>, table = 'dq_throttle'): Promise<void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table))
    throw new RangeError(`ensureThrottleTable: table must be a lower-case SQL identifier; got ${JSON.stringify(table)}`);
  await ensureTable(pool, table);
}

async function ensureTable(pool: Pick<pg.Pool, 'query'>, table: string): Promise<void> {
  // No DDL when the table is there in its current shape: a role without CREATE on the schema may use it.
  const columns = await pool.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM information_schema.columns WHERE table_name = $1 AND table_schema = ANY (current_schemas(false)) AND column_name IN ('gap_us', 'seq')`,
    [table],
  );
  if (columns.rows[0]?.n === '2') return;
  try {
    await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (
      account text NOT NULL,
      endpoint text NOT NULL,
      tat_us bigint NOT NULL,
      factor double precision NOT NULL DEFAULT 1,
      factor_at_us bigint NOT NULL DEFAULT 0,
      gap_us bigint NOT NULL DEFAULT 0,
      seq bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (account, endpoint))`);
  } catch (err) {
    // Two processes creating the table at once: the loser sees a duplicate; the table exists either way.
    const code = (err as { code?: unknown }).code;
    if (code !== '23505' && code !== '42P07') throw err;
  }
  try {
    // Tables made by earlier versions lack the cold-start column.
    await pool.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS gap_us bigint NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS seq bigint NOT NULL DEFAULT 0`);
  } catch (err) {
    // Two processes adding it at once: the loser sees a duplicate column.
    const code = (err as { code?: unknown }).code;
    if (code !== '42701' && code !== '23505') throw err;
  }
}
