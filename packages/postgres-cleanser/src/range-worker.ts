import type { Engine, Logger, Mode, RecordResult } from '@dq/core';
import type { CleanseOptions, CleanseProgress } from './options.js';
import { planPage } from './page-plan.js';
import type { PagePlan } from './page-plan.js';
import type { PageStore } from './page-store.js';
import type { TargetTable } from './preflight.js';
import { validateRows } from './known-rows.js';
import type { ReusedTally } from './known-rows.js';
import type { SourceRow } from './row-values.js';
import type { ClaimedRange } from './work-queue.js';

const MAX_CONFLICT_KEYS = 100;

/** Stops a run: the page not yet written will be read again by the next process. */
export class RunHalt extends Error {
  constructor(
    readonly error: { code: string; message: string; requestId?: string },
    readonly exitCode: number,
  ) {
    super(error.message);
  }
}

/** What a range worker needs; `progress` and `conflictKeys` are shared by the workers of a process. */
export interface WorkContext {
  engine: Engine;
  store: PageStore;
  target: TargetTable;
  mode: Mode;
  batchSize: number;
  /** Whether the next page is read and validated while the previous one is written. */
  readAhead: boolean;
  worker: string;
  runId: string;
  progress: CleanseProgress;
  /** Rows of this process answered from what an earlier run wrote to them (no call, no write). */
  reused: ReusedTally;
  conflictKeys: string[];
  /** Rows the table could not take (see CleanseSummary.notWritten), shared like `conflictKeys`. */
  notWritten: { count: number; keys: string[] };
  logger: Logger;
  options: CleanseOptions;
  /** True once the process is stopping (interrupt, or another worker of it halted or failed). */
  stopping: () => boolean;
  /**
   * The error that ended a session the worker holds without querying it — its range's claim, the
   * run's hold — once node-postgres reported it; undefined while both last. Without the claim
   * another process may work the range, without the hold the run is unguarded (`status` shows it
   * interrupted, a second run of the table is not refused): no page's calls start, and no page is
   * written, after either is gone.
   */
  sessionLost: () => unknown;
  /** Aborts the engine work of the pages under way (a stop that does not wait for them, README "What a run does"). */
  cut: AbortSignal;
}

/** A page read and validated, ready to be written. */
interface ReadyPage {
  rows: SourceRow[];
  results: RecordResult[];
  plan: PagePlan;
}

/** Reads the page after `after` and validates it. */
async function prepare(ctx: WorkContext, after: string | null, hi: string | null): Promise<ReadyPage> {
  const t0 = performance.now();
  const rows = await ctx.store.read(after, hi, ctx.batchSize);
  const t1 = performance.now();
  const lost = ctx.sessionLost();
  if (lost !== undefined) throw lost;
  const results = rows.length === 0 ? [] : await validateRows(ctx.engine, rows, ctx.target.columns, ctx.reused, ctx.cut);
  const t2 = performance.now();
  ctx.progress.timings.readMs += t1 - t0;
  ctx.progress.timings.validateMs += t2 - t1;
  // Counted from the results, not from the engine's running total: pages of several workers are
  // validated at the same time. Each distinct request is the `api` source of exactly one result.
  let calls = 0;
  for (const r of results) if (r.source === 'api') calls += 1;
  return { rows, results, plan: planPage(ctx.mode, ctx.target.columns, rows, results, calls, ctx.target.status.length) };
}

/** Marks a promise handled now (it is awaited later) so that a rejection meanwhile is not "unhandled". */
function later<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

const settle = async (p: Promise<unknown> | null): Promise<void> => {
  await p?.catch(() => undefined);
};

/**
 * Works one claimed range page by page from its checkpoint until it is done, taken over, or the
 * process stops. Pages are written one at a time, in key order, each moving the checkpoint from
 * where the previous one left it. With `readAhead`, page n+1 is read and validated while page n
 * is written — never further ahead — so a crash repeats the calls of at most two pages per worker.
 * Returns once no write of the range is in flight.
 */
export async function workRange(ctx: WorkContext, range: ClaimedRange): Promise<void> {
  const { store, progress } = ctx;
  if (ctx.stopping()) return;
  let last = range.lastKey;
  let next: Promise<ReadyPage> | null = later(prepare(ctx, last, range.hi));
  while (next !== null) {
    const page: ReadyPage = await next;
    next = null;
    // The page's answers are in the result store: the run that resumes reads it again and pays nothing for them.
    const lost = ctx.sessionLost();
    if (lost !== undefined) throw lost;
    const { rows, plan } = page;
    const done = rows.length < ctx.batchSize;
    const lastKey = rows.at(-1)?.key ?? last;
    const t0 = performance.now();
    const writing = store.commit(ctx.runId, ctx.worker, rows.length > 0 ? plan.write : null, {
      rangeNo: range.rangeNo,
      prevKey: last,
      lastKey,
      done,
      counts: plan.counts,
    });
    const more = !done && !ctx.stopping();
    if (more && ctx.readAhead) next = later(prepare(ctx, lastKey, range.hi));
    let res: Awaited<typeof writing>;
    try {
      res = await writing;
    } catch (e) {
      await settle(next);
      throw e;
    }
    progress.timings.writeMs += performance.now() - t0;
    if (res.taken) {
      await settle(next);
      ctx.logger.warn('key range taken over by another process; its page was not written', { runId: ctx.runId, range: range.rangeNo });
      return;
    }
    progress.rows += rows.length;
    progress.written += res.written;
    progress.unchanged += plan.counts.unchanged;
    progress.conflicts += res.conflicts.length;
    progress.apiCalls += plan.counts.apiCalls;
    for (const r of page.results) progress.byStatus[r.status] += 1;
    for (const k of res.conflicts) if (ctx.conflictKeys.length < MAX_CONFLICT_KEYS) ctx.conflictKeys.push(k);
    // The conflicts are rows changed since they were read, rows another session held locked, and
    // rows the table left out of the UPDATE though they still hold the values read (`skipped`).
    const locked = new Set(res.locked);
    const skipped = new Set(res.skipped);
    const changed = res.conflicts.filter((k) => !locked.has(k) && !skipped.has(k));
    if (changed.length > 0)
      ctx.logger.warn('rows changed by someone else since they were read were not written', {
        runId: ctx.runId,
        keys: changed.slice(0, 20),
        count: changed.length,
      });
    if (res.skipped.length > 0)
      ctx.logger.warn(
        `rows the table left out of the UPDATE though no one changed them (a BEFORE UPDATE trigger of ${ctx.target.qualified} that returns NULL for them, or a row-level security policy whose USING hides them from UPDATE) were not written; they are conflicts on every run until that trigger or policy lets the database user update them`,
        { runId: ctx.runId, keys: res.skipped.slice(0, 20), count: res.skipped.length },
      );
    if (res.locked.length > 0)
      ctx.logger.warn('rows locked by another session (an open transaction) were not written; the next run writes them, their answers stored', {
        runId: ctx.runId,
        keys: res.locked.slice(0, 20),
        count: res.locked.length,
      });
    for (const k of [...plan.unfit.map((u) => u.key), ...res.refused.map((r) => r.key)]) {
      ctx.notWritten.count += 1;
      if (ctx.notWritten.keys.length < MAX_CONFLICT_KEYS) ctx.notWritten.keys.push(k);
    }
    if (res.refused.length > 0)
      ctx.logger.warn('rows whose corrected values the table refused (constraint, trigger) were not written', {
        runId: ctx.runId,
        rows: res.refused.slice(0, 20).map((r) => ({ key: r.key, reason: r.reason })),
        count: res.refused.length,
      });
    if (plan.unfit.length > 0)
      ctx.logger.warn('rows whose correction is longer than its column holds were not written; widen the column and run again', {
        runId: ctx.runId,
        rows: plan.unfit.slice(0, 20),
        count: plan.unfit.length,
      });
    ctx.options.onPage?.({ ...progress, byStatus: { ...progress.byStatus }, timings: { ...progress.timings } });
    last = lastKey;
    if (ctx.stopping()) {
      // The page validated ahead is dropped unwritten: the resumed run reads it again.
      await settle(next);
      return;
    }
    if (more && !ctx.readAhead) next = prepare(ctx, last, range.hi);
  }
}
