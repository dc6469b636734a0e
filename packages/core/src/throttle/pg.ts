import pg from 'pg';
import { DqError, LOCAL_CODES } from '../errors/index.js';
import { createBoundedPool } from '../pg-pool.js';
import { isQueryTimeout, lockHolders, postgresVersionProblem, redactUrl } from '../store/pg-version.js';
import { ENDPOINT_IDS, resolveThrottleOptions } from './limits.js';
import type { ThrottleOptions } from './limits.js';
import { unwatchAbort, watchAbort } from '../abort-watch.js';
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
   * Slots are reserved at most this far ahead of the pacing (ms; a round trip's batch may reach
   * `maxBatch` intervals further). Default 300. A lane is reserved again at most 100 ms (or this,
   * if less) before it is free: a request sent late ends, and its end moves its lane's next slot
   * (see `ended`), before any process has reserved that slot.
   */
  horizonMs?: number;
  /**
   * A digest of the API key (`keyIdOf`): while this throttle reserves, it records every
   * {@link KEY_REFRESH_MS} that the key is in use under `account` (see {@link otherAccountsOfKey}).
   */
  keyId?: string;
}

/** A {@link Throttle} whose budget is shared by every process using the same table and account. */
export interface PgThrottle extends Throttle {
  /** Waits for pending backoff writes and closes the pool if the throttle created it. */
  close(): Promise<void>;
  /** What this process's throttle did so far: where the time between slots went (see {@link PgThrottleStats}). */
  stats(): PgThrottleStats;
}

/**
 * Counters of one process's Postgres throttle, to see what limits the rate: round trips per slot,
 * how late callers were woken after their slot (`sendDelayMs`), and how often and how far late
 * answers moved the shared slots back (`lateAnswers`, `lateByMs`).
 */
export interface PgThrottleStats {
  /** Slots handed to callers (each one request sent at it). */
  granted: number;
  /** Reserving round trips to Postgres that got slots. */
  reserveTrips: number;
  /** Round trips that found every slot up to the horizon taken (and the query for when to try again). */
  fullTrips: number;
  /** Callers woken too late to use their slot, which took a fresh one (the slot lapsed). */
  lapsed: number;
  /** How late callers were woken after their slot, ms: one sample per granted slot (the last 16,384). */
  sendDelayMs: number[];
  /** Attempts that ended (answered or not) later than the margin allows for: each moved its lane's next slot back by `lateByMs`. */
  lateAnswers: number;
  /** How much later than the margin allows for each late attempt ended, ms (the last 16,384). */
  lateByMs: number[];
  /** Times a request still in flight shortly before its lane could be reserved again held that lane longer. */
  heldLanes: number;
}

interface Waiter {
  resolve(ticket: number): void;
  reject(err: unknown): void;
  signal: AbortSignal | undefined;
  /** How often this waiter woke too late and queued again. */
  stale: number;
}

/** A slot reserved for a caller aborted before it: its lane and its place in the pacing go back (see `giveBack`). */
interface Returned {
  slot: number;
  lane: number;
  /** The lane's value before the reservation, and the value the reservation gave it. */
  prev: number;
  held: number;
}

/** One endpoint's callers waiting in this process, and what it reserved for them. */
interface EndpointQueue {
  waiters: Waiter[];
  busy: boolean;
  /** Slots reserved for callers aborted before them, to give back in the next round trip. */
  returned: Returned[];
  /** Slots reserved for callers still sleeping until them. */
  sleeping: Set<number>;
  /** The latest slot used (or let lapse) by a caller of this process. */
  lastUsed: number;
  /** The pacing (`tat_us`) this process's last round trip left in the table, if it is known to be still there. */
  tat: number | undefined;
  /** Slots given back whose pacing could not go back yet: a later slot was still kept. */
  unpaced: number[];
  /** Lanes of the account's row at the last reservation: more than this process's own limit while a process with a higher one claims it. */
  accountLanes: number;
  /** When (performance.now, ms) this process may next ask for a slot under its own, lower limit (see `gate`). */
  nextOwnMs: number;
}

/** A waiter woken late takes a fresh slot at most this many times, so a busy process is not starved. */
const MAX_STALE_RETRIES = 3;
/** How often the database clock offset is measured again, in ms. */
const CLOCK_SYNC_MS = 60_000;
const NOW_US = '(extract(epoch FROM clock_timestamp()) * 1000000)::bigint';
/** An endpoint with no slot taken for this long (µs) starts cold (see `coldStartGapMs`). */
const IDLE_US = 1_000_000;
const SECOND_US = 1_000_000;
/** How often requests still in flight are looked at, ms. */
const WATCHDOG_MS = 50;
/** How far ahead a request still in flight holds its lane, each time it is looked at, ms. */
const HOLD_MS = 500;
/**
 * A request whose end was not told this long (ms) is taken to have been counted by then, and holds
 * its lane no longer: a caller that does not tell every end (the transport does, see `ended`)
 * cannot hold lanes for ever.
 */
const UNANSWERED_GIVE_UP_MS = 10_000;
/** When no lane is free, a process waits until this many are (or as many as its callers waiting). */
const LANES_PER_WAIT = 4;
/** A lane is reserved at most this far (µs) ahead of the time it is free (see the reserve statement). */
const LANE_AHEAD_US = 100_000;
/** Clock granularity between the platform's arrival stamp and our reading of an attempt's end, µs. */
const ANSWER_GUARD_US = 1_000;
/**
 * A process whose `--rate-limit` is the highest of the account's processes claims the row's lanes
 * (and pacing) for this long (µs) after each reservation: a process with a lower limit paces the
 * account's row at the claimed one and itself locally at its own (README, "One rate budget per
 * account"), so its lower limit caps its own calls, not the account's.
 */
const CLAIM_US = 2_000_000;
/** Longest sleep before a process whose slots are all taken reads the row again, ms. */
const MAX_FULL_WAIT_MS = 1_000;
/** Tickets whose send time is remembered for `ended` (more than any process keeps in flight). */
const TICKET_RING = 1 << 14;
/** How often a throttle that reserves records that its API key is in use under its account, ms (see `keyId`). */
const KEY_REFRESH_MS = 2_000;
/**
 * A key's record younger than this (µs) is of a process using the key now (see
 * {@link otherAccountsOfKey}): a process that reserves refreshes it every {@link KEY_REFRESH_MS},
 * so this leaves room for a pause of several seconds between its calls (a slow answer, the next
 * input batch), while a run that ended more than 10 s ago no longer counts.
 */
const KEY_ACTIVE_US = 10 * SECOND_US;

/**
 * A GCRA limiter whose theoretical arrival time lives in Postgres, so several processes of one
 * account share the contract's per-account limits, with one lane per request of the limit (see the
 * reserve statement). Each round trip is one atomic UPDATE that reserves a slot for every caller
 * waiting in this process (up to `maxBatch`, and as many lanes as are free); the database clock is
 * the common time base, and each caller then sleeps locally until its slot. Processes may use
 * different limits: a lower one caps that process's own calls, and the account keeps to the highest
 * limit a process used in the last {@link CLAIM_US} (README, "One rate budget per account"). Same
 * defaults as `createSharedThrottle`.
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
  // A waiter woken this late sends all the same: its answer comes, and moves its lane's next slot,
  // before that slot is reserved (a second later, and reserved at most 100 ms ahead).
  const lateMs = (SECOND_US - horizonUs) / 2000;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`createPgThrottle: maxBatch must be an integer ≥ 1; got ${maxBatch}`);
  // An owned pool gives up on a database that stops answering (see createBoundedPool): a
  // reservation then fails (the run stops with exit 75) instead of waiting forever.
  const owned = options.pool === undefined ? createBoundedPool(options.connectionString, 2) : undefined;
  const pool = options.pool ?? owned!.pool;
  try {
    // Before any DDL: the reserve statement needs PostgreSQL 12 (README, "Supported PostgreSQL versions").
    const where = options.connectionString === undefined ? 'the given pool' : redactUrl(options.connectionString);
    const tooOld = await postgresVersionProblem(pool, 'the shared rate budget', where);
    if (tooOld !== undefined) {
      throw new DqError(`${tooOld}; upgrade the server, or run with --budget off to use a budget of this process only`, {
        code: LOCAL_CODES.budgetDbVersion,
        retriable: false,
        scope: 'run',
      });
    }
    await ensureTable(pool, table);
  } catch (err) {
    await owned?.end();
    throw (await lockedTable(err, pool, table)) ?? err;
  }
  /** A later step of opening: on failure the pool made here is ended too, and a wait for a lock is named. */
  const opening = async (step: () => Promise<unknown>): Promise<void> => {
    try {
      await step();
    } catch (err) {
      const locked = await lockedTable(err, pool, table);
      await owned?.end();
      throw locked ?? err;
    }
  };

  const recoveryPerUs = o.recoveryPerSecond / 1e6;
  // How long a lane stays taken after its slot, µs: a second paced at 1 - margin (1010 ms at the
  // default 1 %), so an answer may come 10 ms after the slot before it moves anything.
  const laneSpanUs = Math.round(SECOND_US / (1 - o.margin));
  const laneAheadUs = Math.min(horizonUs, LANE_AHEAD_US);
  // One row per endpoint, made up front, so each reservation is a single UPDATE of a row that exists;
  // made again when a reservation finds it gone (deleted by hand: see `pump`).
  const makeRows = (): Promise<unknown> =>
    pool.query(`INSERT INTO ${table} (account, endpoint, tat_us) SELECT $1, e, 0 FROM unnest($2::text[]) AS e ON CONFLICT (account, endpoint) DO NOTHING`, [
      options.account,
      ENDPOINT_IDS.filter((e) => o.limits[e] > 0),
    ]);
  await opening(makeRows);
  // Reserves $3 slots: the GCRA pacing (theoretical arrival time `tat_us`, slowed by the backoff
  // factor) and, for the platform's sliding second, one lane per request of the limit (`lanes`: the
  // earliest time the next request of each lane may go). Each slot takes the lane free soonest; the
  // lane is then free a second plus the margin later (a late end moves it further, see
  // `ended`). Any limit + 1 requests share a lane, and one lane's requests arrive over a second
  // apart, so no sliding second holds more than the limit, whichever process sent them; a late
  // answer delays only the next request of its lane, not every slot after it. An endpoint idle for
  // a second starts cold: its first slot is now, the next ones `gap` later. The row is locked (FOR
  // UPDATE) and updated in one statement: concurrent reservations see each other's lanes.
  // A lane is reserved again only when it is free within `laneAheadUs`: by then the answer to its
  // previous request has come, unless it came over a second late, so the move is not too late.
  // $4 pacing interval (µs, before backoff), $5 recovery per µs, $6 cold-start gap (µs), $7 horizon
  // (µs), $8 lanes (the limit), $9 how long a lane stays taken (µs), $10 lane lookahead (µs).
  // A row edited by hand, or left by a clock that jumped, must not hold the account's runs for
  // ever: a time further ahead than any process sets one ($11, see `furthestUs`) counts as free.
  const TAT = `(CASE WHEN t.tat_us > c.now_us + $11::bigint THEN 0 ELSE t.tat_us END)`;
  const LANE = `CASE WHEN x.v > c.now_us + $11::bigint THEN 0 ELSE x.v END`;
  const reserveSql = `
    WITH c AS MATERIALIZED (SELECT ${NOW_US} AS now_us),
    r AS MATERIALIZED (
      SELECT t.seq, t.tat_us, t.factor, t.factor_at_us, t.lanes,
        CASE WHEN cardinality(t.lanes) > $8::int AND t.gap_us BETWEEN c.now_us - ${CLAIM_US} AND c.now_us
          THEN cardinality(t.lanes) ELSE $8::int END AS n
      FROM ${table} AS t, c
      WHERE t.account = $1 AND t.endpoint = $2 AND ${TAT} < c.now_us + $7::bigint
      FOR UPDATE OF t),
    l AS MATERIALIZED (
      SELECT t.seq, t.n, c.now_us, greatest(${TAT}, c.now_us) AS b, ${TAT} < c.now_us - ${IDLE_US} AS idle,
        CASE WHEN t.n = $8::int THEN $4::float8 ELSE $12::float8 / t.n END AS iv,
        least(1.0, t.factor + $5::float8 * (c.now_us - t.factor_at_us))::float8 AS f,
        CASE WHEN cardinality(t.lanes) = t.n
          THEN (SELECT array_agg(${LANE} ORDER BY x.i) FROM unnest(t.lanes) WITH ORDINALITY AS x(v, i))
          WHEN cardinality(t.lanes) > t.n
          THEN (SELECT array_agg(z.v ORDER BY z.i) FROM (SELECT ${LANE} AS v, x.i FROM unnest(t.lanes) WITH ORDINALITY AS x(v, i) ORDER BY 1 DESC LIMIT t.n) AS z)
          WHEN cardinality(t.lanes) > 0
          THEN (SELECT array_agg(${LANE} ORDER BY x.i) FROM unnest(t.lanes) WITH ORDINALITY AS x(v, i)) || array_fill(0::bigint, ARRAY[t.n - cardinality(t.lanes)])
          ELSE array_fill(0::bigint, ARRAY[t.n]) END AS lanes
      FROM r AS t, c),
    p AS (
      SELECT u.v, u.i::int AS i, (row_number() OVER (ORDER BY u.v, u.i) - 1)::int AS k
      FROM l, unnest(l.lanes) WITH ORDINALITY AS u(v, i) WHERE u.v < l.now_us + $10::bigint ORDER BY u.v, u.i LIMIT $3::int),
    s AS (
      SELECT p.i, p.k, p.v, greatest(
          l.b + round(p.k * l.iv / l.f)::bigint + CASE WHEN l.idle AND p.k > 0 THEN $6::bigint ELSE 0 END,
          max(p.v - round(p.k * l.iv / l.f)::bigint) OVER (ORDER BY p.k) + round(p.k * l.iv / l.f)::bigint) AS s
      FROM p, l),
    u AS (
      UPDATE ${table} AS t SET
        seq = l.seq + (SELECT count(*) FROM s),
        tat_us = (SELECT max(s.s) FROM s) + round(l.iv / l.f)::bigint + CASE WHEN l.idle AND (SELECT count(*) FROM s) = 1 THEN $6::bigint ELSE 0 END,
        lanes = (SELECT array_agg(coalesce(s.s + $9::bigint, x.v) ORDER BY x.i) FROM unnest(l.lanes) WITH ORDINALITY AS x(v, i) LEFT JOIN s ON s.i = x.i),
        gap_us = CASE WHEN l.n = $8::int THEN l.now_us ELSE t.gap_us END
      FROM l WHERE t.account = $1 AND t.endpoint = $2 AND EXISTS (SELECT 1 FROM s)
      RETURNING l.seq, t.tat_us)
    SELECT (SELECT seq FROM u)::text AS seq, (SELECT n FROM l) AS n, (SELECT tat_us FROM u)::text AS tat, (SELECT f FROM l) AS factor,
      array_agg(s.s::text ORDER BY s.k) AS slots, array_agg(s.i ORDER BY s.k) AS lanes, array_agg(s.v::text ORDER BY s.k) AS prev
    FROM s HAVING count(*) > 0`;
  // A rate decreased less than the cooldown ($6) ago is not decreased again; a decrease time in the
  // future (an edited row, a clock that jumped back) is no recent decrease: a 429 still slows the account.
  const backoffSql = `
    WITH c AS MATERIALIZED (SELECT ${NOW_US} AS now_us)
    INSERT INTO ${table} AS t (account, endpoint, tat_us, factor, factor_at_us)
    SELECT $1, $2, c.now_us + $7::bigint, greatest($4::float8, $3::float8), c.now_us FROM c
    ON CONFLICT (account, endpoint) DO UPDATE SET
      factor = CASE WHEN (SELECT now_us FROM c) - t.factor_at_us BETWEEN 0 AND $6::bigint - 1 THEN t.factor
        ELSE greatest($4::float8, $3::float8 * least(1.0, greatest(0.0, t.factor) + $5::float8 * greatest(0, (SELECT now_us FROM c) - t.factor_at_us))) END,
      factor_at_us = CASE WHEN (SELECT now_us FROM c) - t.factor_at_us BETWEEN 0 AND $6::bigint - 1 THEN t.factor_at_us
        ELSE (SELECT now_us FROM c) END,
      tat_us = greatest(t.tat_us, (SELECT now_us FROM c) + $7::bigint)`;
  // An attempt ended late (see `ended`): the platform counted the request, if at all, before $4 (the
  // end's time, database clock, µs), so the next request of its lane $3 goes a second after that at the earliest.
  const endedSql = `
    UPDATE ${table} AS t SET lanes[$3::int] = greatest(t.lanes[$3::int], $4::bigint + ${SECOND_US + ANSWER_GUARD_US})
    WHERE t.account = $1 AND t.endpoint = $2 AND cardinality(t.lanes) >= $3::int`;

  // Gives back slots reserved for callers aborted before them (see `giveBack`): $3 lanes, $4 the
  // value each reservation gave its lane, $5 the value before; a lane reserved again since keeps its
  // value. $6 the pacing to go back to, if the row still holds $7, the pacing this process left there.
  const giveBackSql = `
    UPDATE ${table} AS t SET
      lanes = (SELECT array_agg(CASE WHEN x.v = g.held THEN g.prev ELSE x.v END ORDER BY x.i)
        FROM unnest(t.lanes) WITH ORDINALITY AS x(v, i) LEFT JOIN unnest($3::int[], $4::bigint[], $5::bigint[]) AS g(i, held, prev) ON g.i = x.i),
      tat_us = CASE WHEN $6::bigint IS NOT NULL AND t.tat_us = $7::bigint THEN $6::bigint ELSE t.tat_us END
    WHERE t.account = $1 AND t.endpoint = $2
    RETURNING t.tat_us::text AS tat`;

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
  await opening(syncClock);

  /** When the key's record was last written (performance.now, ms); undefined: never (no key, or the record cannot be written). */
  let keySeenMs: number | undefined = options.keyId === undefined ? undefined : -Infinity;
  /** This thread's use of the key's record (see {@link KeyUse}), which `close` may remove. */
  const keyUse = options.keyId === undefined ? undefined : keyUseOf(options.connectionString, table, options.keyId, options.account);
  if (keyUse) keyUse.open++;
  let closed = false;
  /**
   * Removes the key's record when no throttle of this thread uses it any more, this thread wrote
   * it last, and no other process wrote it in the last {@link KEY_ACTIVE_US}: a process that wrote
   * it since still uses the key, and one that wrote it before is counted by that window no longer.
   */
  const forgetKey = async (): Promise<void> => {
    if (!keyUse || --keyUse.open > 0 || keyUse.seen === undefined || keySeenMs === undefined) return;
    if (performance.now() - keyUse.othersAtMs <= KEY_ACTIVE_US / 1000) return;
    const seen = keyUse.seen;
    keyUse.seen = undefined;
    await pool
      .query(`DELETE FROM ${keyTableOf(table)} WHERE key_id = $1 AND account = $2 AND seen_us = $3::bigint`, [options.keyId, options.account, seen])
      // A record left behind is removed by a later run after a day (see otherAccountsOfKey).
      .catch(() => undefined);
  };
  /** Records, at most every KEY_REFRESH_MS and never in a reservation's round trip, that the key is in use under the account. */
  const refreshKey = (): void => {
    if (keySeenMs === undefined || performance.now() - keySeenMs < KEY_REFRESH_MS) return;
    keySeenMs = performance.now();
    const p = withKeyTable(pool, table, () => touchKey(pool, table, options.account, options.keyId!, keyUse!, false)).catch(() => {
      // A table this user may not create or write: the budget works as before, without the record.
      keySeenMs = undefined;
    });
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  const queues = new Map<EndpointId, EndpointQueue>();
  /** Local send time (ms) and interval (µs) of recent tickets, by ticket modulo the ring's size. */
  const sent = { ticket: new Float64Array(TICKET_RING).fill(-1), slotMs: new Float64Array(TICKET_RING), lane: new Int32Array(TICKET_RING) };
  const pending = new Set<Promise<unknown>>();
  /**
   * Requests sent whose attempt has not ended yet, by ticket: while one is in flight the platform
   * may still count it, so shortly before its lane may be reserved again the lane is held (see
   * `holdLanes`). Its end (an answer, a network error, a timeout, an abort) frees the lane at once.
   */
  const inFlight = new Map<number, { endpoint: EndpointId; lane: number; slotMs: number; checkAt: number }>();
  let watchdog: ReturnType<typeof setInterval> | undefined;
  /** Whether the caller has told any end (`ended` is optional: a caller that never does holds no lane). */
  let reportsEnds = false;
  const moveLane = (endpoint: EndpointId, lane: number, countedByMs: number): void => {
    const p = pool
      .query(endedSql, [options.account, endpoint, lane, Math.round((countedByMs + offsetMs) * 1000)])
      // A lost write only means the lane's next slot stays where it was.
      .catch(() => undefined);
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  function holdLanes(): void {
    const now = performance.now();
    for (const [ticket, u] of inFlight) {
      if (now - u.slotMs > UNANSWERED_GIVE_UP_MS) inFlight.delete(ticket);
      else if (reportsEnds && now >= u.checkAt) {
        // Still in flight: the platform may count it as late as HOLD_MS from now; its lane waits for that.
        counters.heldLanes++;
        moveLane(u.endpoint, u.lane, now + HOLD_MS);
        u.checkAt = now + HOLD_MS - 2 * WATCHDOG_MS;
      }
    }
    if (inFlight.size === 0 && watchdog) {
      clearInterval(watchdog);
      watchdog = undefined;
    }
  }
  const counters = { granted: 0, reserveTrips: 0, fullTrips: 0, lapsed: 0, lateAnswers: 0, heldLanes: 0 };
  /** The last TICKET_RING samples of a measure, oldest overwritten first. */
  const ring = () => {
    const xs = new Float64Array(TICKET_RING);
    let n = 0;
    return {
      add: (x: number): void => void (xs[n++ % TICKET_RING] = x),
      all: (): number[] => Array.from(n <= TICKET_RING ? xs.subarray(0, n) : xs),
    };
  };
  const sendDelayMs = ring();
  const lateByMs = ring();

  const queue = (endpoint: EndpointId): EndpointQueue => {
    let q = queues.get(endpoint);
    if (!q)
      queues.set(
        endpoint,
        (q = { waiters: [], busy: false, returned: [], sleeping: new Set(), lastUsed: -Infinity, tat: undefined, unpaced: [], accountLanes: 0, nextOwnMs: 0 }),
      );
    return q;
  };
  /** Runs `pump`, which `close` waits for. */
  const kick = (endpoint: EndpointId): void => {
    const p = pump(endpoint);
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  /**
   * Gives back the slots reserved for callers aborted before them (a run that stops, a spending cap
   * reached): their lanes are free again at once for every process of the account, not a second
   * later, and the pacing goes back to the earliest of them that no slot still used by this process
   * follows, unless another process reserved since.
   */
  async function giveBack(endpoint: EndpointId, q: EndpointQueue): Promise<void> {
    // One entry per lane (the latest): a lane is reserved again only after its slot, given back or not.
    const returned = [...new Map(q.returned.splice(0).map((r) => [r.lane, r])).values()];
    const kept = Math.max(q.lastUsed, ...q.sleeping);
    // Slots given back earlier while a later one was still kept count too, once nothing follows them.
    const unpaced = [...q.unpaced, ...returned.map((r) => r.slot)].filter((slot) => slot > q.lastUsed);
    const back = Math.min(...unpaced.filter((slot) => slot > kept));
    try {
      const res = await pool.query<{ tat: string }>(giveBackSql, [
        options.account,
        endpoint,
        returned.map((r) => r.lane),
        returned.map((r) => r.held),
        returned.map((r) => r.prev),
        Number.isFinite(back) ? back : null,
        q.tat ?? null,
      ]);
      const tat = Number(res.rows[0]?.tat);
      // Still this process's pacing (gone back, or kept for a later give-back), or another's since.
      q.tat = tat === back || tat === q.tat ? tat : undefined;
      q.unpaced = tat === back || q.tat === undefined ? [] : unpaced;
    } catch {
      // A lost give-back only means those lanes stay taken for their second.
      q.tat = undefined;
      q.unpaced = [];
    }
  }
  const intervalUs = (endpoint: EndpointId): number => 1e6 / (o.limits[endpoint] * (1 - o.margin));
  /**
   * Furthest ahead of now (µs) any process sets the endpoint's pacing or a lane: a Retry-After hold,
   * then a round trip's slots at the floor rate, a lane's second and the margin, and the hold of a
   * request in flight; with a second to spare.
   */
  const furthestUs = (endpoint: EndpointId): number =>
    Math.round(o.maxHoldMs * 1000 + ((maxBatch + 1) * intervalUs(endpoint)) / o.floor + laneSpanUs + HOLD_MS * 1000 + 2 * SECOND_US);
  /** One lane per request the platform allows in a second. */
  const lanes = (endpoint: EndpointId): number => Math.max(1, Math.floor(o.limits[endpoint]));

  async function pump(endpoint: EndpointId): Promise<void> {
    const q = queues.get(endpoint);
    if (!q || q.busy) return;
    if (q.returned.length > 0) {
      q.busy = true;
      await giveBack(endpoint, q);
      q.busy = false;
    }
    const batch = q.waiters.splice(0, maxBatch).filter((w) => {
      if (!w.signal?.aborted) return true;
      w.reject(w.signal.reason);
      return false;
    });
    if (batch.length === 0) {
      if (q.waiters.length > 0 || q.returned.length > 0) kick(endpoint);
      return;
    }
    q.busy = true;
    try {
      if (performance.now() - syncedAt > CLOCK_SYNC_MS) await syncClock();
      const base = intervalUs(endpoint);
      const res = await pool.query<{ seq: string; n: number; tat: string; factor: number; slots: string[]; lanes: number[]; prev: string[] }>(reserveSql, [
        options.account,
        endpoint,
        batch.length,
        base,
        recoveryPerUs,
        Math.round(o.coldStartGapMs * 1000),
        horizonUs,
        lanes(endpoint),
        laneSpanUs,
        laneAheadUs,
        furthestUs(endpoint),
        SECOND_US / (1 - o.margin),
      ]);
      const row = res.rows[0];
      if (!row) {
        counters.fullTrips++;
        // Every slot up to the horizon (or every lane within its lookahead) is taken: wait until the next free one is within it.
        q.waiters.unshift(...batch);
        // Waits for as many lanes as callers wait here (up to 4), not for the first one: each round trip
        // then brings several slots, and the first of them is still ahead (lanes free every 10 ms at 100/s).
        const ahead = await pool.query<{ wait_us: string }>(
          `SELECT greatest(tat_us - ${NOW_US} - $3::bigint,
             (SELECT v FROM unnest(lanes) AS v ORDER BY v OFFSET greatest(0, least($5::int, cardinality(lanes)) - 1) LIMIT 1) - ${NOW_US} - $4::bigint)::text AS wait_us
           FROM ${table} WHERE account = $1 AND endpoint = $2`,
          [options.account, endpoint, horizonUs, laneAheadUs, Math.min(q.waiters.length, maxBatch, LANES_PER_WAIT)],
        );
        // The row is gone (deleted by hand, or the table emptied): made again, the next round trip reserves.
        if (ahead.rows.length === 0) await makeRows();
        const waitMs = Number(ahead.rows[0]?.wait_us ?? 0) / 1000;
        // At least a millisecond: the lanes free up at the pace of the limit. At most a second: the
        // row is read again then (another process's give-back, or an edit, may free it sooner).
        await sleep(Math.min(MAX_FULL_WAIT_MS, Math.max(1, Math.ceil(waitMs))));
      } else {
        counters.reserveTrips++;
        refreshKey();
        q.tat = Number(row.tat);
        // The account's lanes, claimed by a process with a higher limit: this one paces itself at its own (see `gate`).
        q.accountLanes = Number(row.n);
        // Fewer lanes free than callers waiting: the others wait for the next round trip.
        if (row.slots.length < batch.length) q.waiters.unshift(...batch.splice(row.slots.length));
        const toleranceUs = (o.burst - 1) * (base / row.factor);
        const firstTicket = Number(row.seq);
        const now = performance.now();
        batch.forEach((w, k) => {
          const slot = Number(row.slots[k]);
          const lane = row.lanes[k] as number;
          const slotLocalMs = (slot - toleranceUs) / 1000 - offsetMs;
          q.sleeping.add(slot);
          sleep(Math.max(0, Math.ceil(slotLocalMs - now)), w.signal).then(
            () => {
              q.sleeping.delete(slot);
              q.lastUsed = Math.max(q.lastUsed, slot);
              // Woken very late (a stalled event loop): take a fresh slot rather than send a request whose
              // answer might come after the next slot of its lane was reserved.
              const woken = performance.now();
              if (woken - slotLocalMs > lateMs && w.stale < MAX_STALE_RETRIES) {
                counters.lapsed++;
                w.stale++;
                queue(endpoint).waiters.unshift(w);
                void pump(endpoint);
              } else {
                const ticket = firstTicket + k;
                const i = ticket % TICKET_RING;
                sent.ticket[i] = ticket;
                sent.slotMs[i] = slotLocalMs;
                sent.lane[i] = lane;
                // Looked at again shortly before its lane may be reserved again (`laneAheadUs` before it is free).
                inFlight.set(ticket, {
                  endpoint,
                  lane,
                  slotMs: slotLocalMs,
                  checkAt: slotLocalMs + (laneSpanUs - laneAheadUs) / 1000 - 3 * WATCHDOG_MS,
                });
                if (!watchdog) (watchdog = setInterval(holdLanes, WATCHDOG_MS)).unref();
                counters.granted++;
                sendDelayMs.add(woken - slotLocalMs);
                w.resolve(ticket);
              }
            },
            (reason: unknown) => {
              // Aborted before its slot: the slot is given back, for every process of the account.
              q.sleeping.delete(slot);
              q.returned.push({ slot, lane, prev: Number(row.prev[k]), held: slot + laneSpanUs });
              kick(endpoint);
              w.reject(reason);
            },
          );
        });
      }
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      const failure =
        (await lockedTable(err, pool, table)) ??
        new DqError(`throttle: the Postgres rate store failed${typeof code === 'string' ? ` (${code})` : ''}; check that the database is reachable`, {
          code: 'throttle-store-failed',
          retriable: true,
          cause: err,
        });
      q.waiters = q.waiters.filter((w) => !batch.includes(w));
      for (const w of batch) w.reject(failure);
    } finally {
      q.busy = false;
    }
    void pump(endpoint);
  }

  const enqueue = (endpoint: EndpointId, q: EndpointQueue, signal: AbortSignal | undefined): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      // A caller aborted while queued leaves at once (it has no slot yet); one aborted later gives its slot back.
      const watcher = {
        onCallerAbort(reason: unknown) {
          const at = q.waiters.indexOf(w);
          if (at < 0) return;
          q.waiters.splice(at, 1);
          reject(reason);
        },
      };
      const settled = (): void => {
        if (signal) unwatchAbort(signal, watcher);
      };
      const w: Waiter = {
        resolve: (ticket) => (settled(), resolve(ticket)),
        reject: (err) => (settled(), reject(err)),
        signal,
        stale: 0,
      };
      if (signal) watchAbort(signal, watcher);
      q.waiters.push(w);
      void pump(endpoint);
    });

  return {
    acquire(endpoint, signal) {
      if (!ENDPOINT_IDS.includes(endpoint)) return Promise.reject(new RangeError(`throttle: unknown endpoint ${JSON.stringify(endpoint)}`));
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (o.limits[endpoint] <= 0) return Promise.resolve();
      const q = queue(endpoint);
      if (lanes(endpoint) < q.accountLanes) {
        // A process with a higher limit claims the account's row (see CLAIM_US): this one keeps to its own
        // limit by asking for slots no faster than it, and takes them at the account's pace.
        const now = performance.now();
        const at = Math.max(now, q.nextOwnMs);
        q.nextOwnMs = at + intervalUs(endpoint) / 1000;
        return sleep(Math.ceil(at - now), signal).then(() => enqueue(endpoint, q, signal));
      }
      return enqueue(endpoint, q, signal);
    },
    ended(endpoint, ticket) {
      if (typeof ticket !== 'number') return;
      const i = ticket % TICKET_RING;
      reportsEnds = true;
      inFlight.delete(ticket);
      if (sent.ticket[i] !== ticket) return;
      sent.ticket[i] = -1;
      // The platform counted this request, if at all, at some moment before now: before its answer,
      // or before a network error, a timeout or an abort ended the attempt (nothing sent on a
      // connection arrives after it is gone). So the next request of its lane (whichever process
      // holds it) must go at least a second from now; the request is not handed back, it counts
      // against the rate. The lane's margin normally leaves the next slot further away than that;
      // only a late end (a late send, a slow network, a stalled platform, a timeout) costs a round
      // trip, which moves that lane's next slot back by the difference.
      const now = performance.now();
      const lateBy = now + (SECOND_US + ANSWER_GUARD_US) / 1000 - ((sent.slotMs[i] as number) + laneSpanUs / 1000);
      if (lateBy <= 0) return;
      counters.lateAnswers++;
      lateByMs.add(lateBy);
      moveLane(endpoint, sent.lane[i] as number, now);
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
      if (watchdog) clearInterval(watchdog);
      watchdog = undefined;
      inFlight.clear();
      // Give-backs started by the waits `pending` holds join it: wait until none is left.
      while (pending.size > 0) await Promise.all(pending);
      if (!closed) {
        closed = true;
        await forgetKey();
      }
      await owned?.end();
    },
    stats: () => ({ ...counters, sendDelayMs: sendDelayMs.all(), lateByMs: lateByMs.all() }),
  };
}

/**
 * Creates the shared budget's table (default `dq_throttle`) if it is missing or lacks a column of
 * this version, and the table beside it recording which API key is in use under which account
 * (`dq_throttle_keys`, see {@link otherAccountsOfKey}) if it is missing; sends no DDL when they are
 * there, so a role with only SELECT, INSERT, UPDATE on them (and DELETE on the latter) can use
 * them. `dq-pg init` calls it as the database owner.
 */
export async function ensureThrottleTable(pool: Pick<pg.Pool, 'query'>, table = 'dq_throttle'): Promise<void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table))
    throw new RangeError(`ensureThrottleTable: table must be a lower-case SQL identifier; got ${JSON.stringify(table)}`);
  await ensureTable(pool, table);
  const keys = await pool.query<{ present: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS present`, [keyTableOf(table)]);
  if (!keys.rows[0]?.present) await createKeyTable(pool, table);
}

/** The table beside the budget's `table` recording which API key (a digest) is in use under which account. */
function keyTableOf(table: string): string {
  return `${table.slice(0, 58)}_keys`;
}

/**
 * What this thread knows of the record of one key under one account (one row of {@link keyTableOf},
 * shared by every process of that key and account): the `seen_us` it wrote last, when it last
 * found a write of another process there, and how many of its throttles use it. A thread removes
 * the row only when it wrote it last and no other process wrote it for {@link KEY_ACTIVE_US}
 * (see `forgetKey`): a record another process keeps is never removed.
 */
interface KeyUse {
  seen: string | undefined;
  othersAtMs: number;
  open: number;
}
const keyUses = new Map<string, KeyUse>();
/** The {@link KeyUse} of a key and account in the budget's table `table` of the database at `url` (a given pool's: ''). */
const keyUseOf = (url: string | undefined, table: string, keyId: string, account: string): KeyUse => {
  const id = JSON.stringify([url ?? '', table, keyId, account]);
  let use = keyUses.get(id);
  if (!use) keyUses.set(id, (use = { seen: undefined, othersAtMs: -Infinity, open: 0 }));
  return use;
};

/** Runs `step`; when the key table is missing, creates it and runs `step` again. Rejects when it cannot be created. */
async function withKeyTable<T>(db: Pick<pg.Pool, 'query'>, table: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if ((err as { code?: unknown }).code !== '42P01') throw err;
  }
  await createKeyTable(db, table);
  return step();
}

/** Creates the key table beside the budget's ({@link keyTableOf}) if it is missing. */
async function createKeyTable(db: Pick<pg.Pool, 'query'>, table: string): Promise<void> {
  try {
    // A separate table: the budget's own is never altered for it, and a user who may not create
    // this one uses the budget as before.
    await db.query(`CREATE TABLE IF NOT EXISTS ${keyTableOf(table)} (
      key_id text NOT NULL,
      account text NOT NULL,
      seen_us bigint NOT NULL,
      PRIMARY KEY (key_id, account))`);
  } catch (err) {
    // Two processes creating the table at once: the loser sees a duplicate; the table exists either way.
    const code = (err as { code?: unknown }).code;
    if (code !== '23505' && code !== '42P07') throw err;
  }
}

/**
 * Records that the API key of digest `keyId` is in use under `account` now, in the table beside
 * the budget's ({@link keyTableOf}); with `others`, also returns the other accounts of that table
 * under which the key was in use in the last {@link KEY_ACTIVE_US}, most recent first. One round
 * trip; two when another process of this key and account wrote the row since this thread did (it
 * is then not this thread's to remove, see {@link KeyUse}). Rejects when the table is missing or
 * cannot be written (a user without a grant on it).
 */
async function touchKey(db: Pick<pg.Pool, 'query'>, table: string, account: string, keyId: string, use: KeyUse, others: boolean): Promise<string[]> {
  const keys = keyTableOf(table);
  // Without $4, the row is written only when this thread wrote it last, or no process did in the
  // last KEY_ACTIVE_US: otherwise nothing comes back, and it is written again with $4.
  const sql = `WITH c AS MATERIALIZED (SELECT ${NOW_US} AS now_us),
    me AS (INSERT INTO ${keys} AS k (key_id, account, seen_us) SELECT $1, $2, c.now_us FROM c
      ON CONFLICT (key_id, account) DO UPDATE SET seen_us = excluded.seen_us
      WHERE $4::boolean OR k.seen_us = $3::bigint
        OR k.seen_us NOT BETWEEN excluded.seen_us - ${KEY_ACTIVE_US} AND excluded.seen_us + ${KEY_ACTIVE_US}
      RETURNING k.seen_us)
    SELECT (SELECT seen_us::text FROM me) AS seen, ${
      others
        ? `ARRAY(SELECT k.account FROM ${keys} AS k, c WHERE k.key_id = $1 AND k.account <> $2
            AND k.seen_us BETWEEN c.now_us - ${KEY_ACTIVE_US} AND c.now_us + ${KEY_ACTIVE_US} ORDER BY k.seen_us DESC, k.account)`
        : `'{}'::text[]`
    } AS others`;
  const run = async (force: boolean) => (await db.query<{ seen: string | null; others: string[] }>(sql, [keyId, account, use.seen ?? null, force])).rows[0]!;
  const first = await run(false);
  let seen = first.seen;
  if (seen === null) {
    use.othersAtMs = performance.now();
    seen = (await run(true)).seen;
  }
  use.seen = seen ?? undefined;
  return first.others;
}

/** Key records not written for this long (µs) are removed by the next run's check (see {@link otherAccountsOfKey}). */
const KEY_STALE_US = 24 * 3600 * SECOND_US;

/**
 * The other accounts of the budget's table under which the API key of digest `keyId` is in use
 * now (README, "One rate budget per account"): each account's row allows the whole limit, so
 * processes of one key under two accounts may together send up to twice it. Records this
 * process's own use too. Checks of one key run one after the other (a transaction-scoped advisory
 * lock on the key), each seeing what the ones before it recorded: of two processes starting at the
 * same moment, the second finds the first. Then removes, without waiting on any other session,
 * key records not written for a day. Never rejects: a database where the record cannot be kept (no
 * CREATE, no grant on its table) or that does not answer gives `[]` (the budget itself reports the latter).
 */
export async function otherAccountsOfKey(connectionString: string, account: string, keyId: string, table = 'dq_throttle'): Promise<string[]> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table))
    throw new RangeError(`otherAccountsOfKey: table must be a lower-case SQL identifier; got ${JSON.stringify(table)}`);
  const keys = keyTableOf(table);
  const { pool, end } = createBoundedPool(connectionString, 1);
  try {
    const client = await pool.connect();
    let others: string[];
    let broken: unknown;
    try {
      others = await withKeyTable(client, table, async () => {
        // READ COMMITTED whatever the role's default: the touch, a statement after the lock, then sees
        // every check that held the lock before.
        await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
        try {
          await client.query(`SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, [keys, keyId]);
          const found = await touchKey(client, table, account, keyId, keyUseOf(connectionString, table, keyId, account), true);
          await client.query('COMMIT');
          return found;
        } catch (err) {
          await client.query('ROLLBACK').catch((e: unknown) => void (broken = e));
          throw err;
        }
      });
    } finally {
      client.release(broken as Error | undefined);
    }
    // Records no process wrote for a day: rows another session has locked are left for a later run,
    // and a user without DELETE on the table keeps them.
    await pool
      .query(
        `DELETE FROM ${keys} WHERE (key_id, account) IN (SELECT key_id, account FROM ${keys}
          WHERE seen_us NOT BETWEEN ${NOW_US} - ${KEY_STALE_US} AND ${NOW_US} + ${KEY_STALE_US} LIMIT 1000 FOR UPDATE SKIP LOCKED)`,
      )
      .catch(() => undefined);
    return others;
  } catch {
    return [];
  } finally {
    await end();
  }
}

/**
 * The run's stop when `err` is a query of the budget that ran out of time waiting for a lock another
 * session keeps on the budget's table (a `LOCK TABLE`, an `ALTER TABLE` left open): it names that
 * session rather than calling the database unreachable. Undefined for any other error.
 */
async function lockedTable(err: unknown, pool: Pick<pg.Pool, 'query'>, table: string): Promise<DqError | undefined> {
  const holders = isQueryTimeout(err) ? await lockHolders(pool, table) : undefined;
  if (holders === undefined) return undefined;
  return new DqError(
    `the shared rate budget's table ${table} is locked by another session, ${holders}, and a query of the budget waited for it longer than the query limit; end that transaction (or wait for it), then rerun`,
    { code: LOCAL_CODES.budgetUnreachable, retriable: false, scope: 'run', cause: err },
  );
}

async function ensureTable(pool: Pick<pg.Pool, 'query'>, table: string): Promise<void> {
  // No DDL when the table is there in its current shape: a role without CREATE on the schema may use it.
  const columns = await pool.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM information_schema.columns WHERE table_name = $1 AND table_schema = ANY (current_schemas(false)) AND column_name IN ('gap_us', 'seq', 'lanes')`,
    [table],
  );
  if (columns.rows[0]?.n === '3') return;
  await refuseForeignTable(pool, table);
  try {
    await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (
      account text NOT NULL,
      endpoint text NOT NULL,
      tat_us bigint NOT NULL,
      factor double precision NOT NULL DEFAULT 1,
      factor_at_us bigint NOT NULL DEFAULT 0,
      gap_us bigint NOT NULL DEFAULT 0,
      seq bigint NOT NULL DEFAULT 0,
      lanes bigint[],
      PRIMARY KEY (account, endpoint))`);
  } catch (err) {
    // Two processes creating the table at once: the loser sees a duplicate; the table exists either way.
    const code = (err as { code?: unknown }).code;
    if (code !== '23505' && code !== '42P07') throw err;
  }
  try {
    // Tables made by earlier versions lack the cold-start, ticket or lane columns.
    await pool.query(
      `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS gap_us bigint NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS seq bigint NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS lanes bigint[]`,
    );
  } catch (err) {
    // Two processes adding it at once: the loser sees a duplicate column.
    const code = (err as { code?: unknown }).code;
    if (code !== '42701' && code !== '23505') throw err;
  }
}

/** The columns every layout of the budget's table has had. */
const BASE_COLUMNS = ['account', 'endpoint', 'tat_us', 'factor', 'factor_at_us'];

/**
 * A table of the budget's name that lacks its columns: another application's, left as it is
 * (`code` 42809, wrong object type), where adding the budget's newer columns would change it.
 */
export class ForeignThrottleTable extends Error {
  readonly code = '42809';
  constructor(
    readonly table: string,
    readonly missing: string[],
  ) {
    super(
      `table ${table} in this database is not the shared rate budget's (it lacks the column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}: another application's table?) and was left as it is; rename it, point --budget at another database, or run with --budget off`,
    );
  }
}

/** Throws {@link ForeignThrottleTable} when `table` (on the search path) exists without the budget's columns. */
async function refuseForeignTable(pool: Pick<pg.Pool, 'query'>, table: string): Promise<void> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
    [table],
  );
  if (rows.length === 0) return;
  const missing = BASE_COLUMNS.filter((c) => !rows.some((r) => r.name === c));
  if (missing.length > 0) throw new ForeignThrottleTable(table, missing);
}
