import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { createEngine, createLogger, DqError, exitCodeForError, exitCodeForReport, ExitCode, isRunStop, resolvePolicy } from '@dq/core';
import type { Engine, Logger, Mode, PolicyStatus, ResultClass } from '@dq/core';
import { ensureSchema } from './bookkeeping.js';
import { connect, dbTarget } from './db.js';
import { CleanseError, usageError } from './errors.js';
import { DEFAULT_BATCH_SIZE, DEFAULT_PAGES_PER_CLAIM } from './options.js';
import type { CleanseOptions, CleanseProgress, CleanseSummary } from './options.js';
import { planPage } from './page-plan.js';
import { PageStore } from './page-store.js';
import { inspectTable } from './preflight.js';
import type { TargetTable } from './preflight.js';
import { toRecord } from './row-values.js';
import { finishRun, newRunId, openRun, stopRun } from './runs.js';
import { RangeQueue } from './work-queue.js';
import type { ClaimedRange } from './work-queue.js';

const CLASSES: readonly ResultClass[] = ['A', 'B', 'C', 'D', 'E', 'F'];
const MAX_CONFLICT_KEYS = 100;

/** The engine policy for `--accept`: listed classes are accepted, the others keep review/invalid. */
export function acceptPolicy(accept: readonly ResultClass[]): Record<ResultClass, PolicyStatus> {
  const base = resolvePolicy();
  return Object.fromEntries(
    CLASSES.map((c) => [c, accept.includes(c) ? 'accepted' : base[c] === 'accepted' ? 'review' : base[c]]),
  ) as Record<ResultClass, PolicyStatus>;
}

function copy(p: CleanseProgress): CleanseProgress {
  return { ...p, byStatus: { ...p.byStatus }, timings: { ...p.timings } };
}

function emptyProgress(): CleanseProgress {
  return {
    rows: 0, written: 0, unchanged: 0, conflicts: 0, apiCalls: 0,
    byStatus: { accepted: 0, review: 0, invalid: 0, 'invalid-input': 0, unavailable: 0 },
    timings: { readMs: 0, validateMs: 0, writeMs: 0 },
  };
}

/** Stops a run: the page in flight was not written and will be read again by the next process. */
class RunHalt extends Error {
  constructor(readonly error: { code: string; message: string; requestId?: string }, readonly exitCode: number) {
    super(error.message);
  }
}

/**
 * Cleans the mapped columns of a table in place (issue 5). Pre-flight checks run before any API
 * call and throw {@link CleanseError}s. Then pages of `batchSize` rows are read in key order from
 * claimed key ranges, validated by the engine and written with their audit, results and checkpoint
 * in one transaction each. Several processes with the same `runId` share the ranges; rerunning a
 * run resumes it where its last committed page ended.
 *
 * A stop during the work (quota, credentials: exit 3; platform down, interrupt: 75) is returned
 * in the summary with the run left `stopped` and consistent. Database failures are thrown.
 */
export async function cleanse(options: CleanseOptions): Promise<CleanseSummary> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  logger.redactor.add(options.apiKey);
  const db = dbTarget(options.db, logger.redactor);
  const mode: Mode = options.mode ?? 'address';
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const pagesPerClaim = options.pagesPerClaim ?? DEFAULT_PAGES_PER_CLAIM;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) throw usageError('--batch-size', `${batchSize} must be an integer from 1 to 100000`);
  if (!Number.isInteger(pagesPerClaim) || pagesPerClaim < 1) throw usageError('--pages-per-claim', `${pagesPerClaim} must be a positive integer`);
  const accept = options.accept ?? ['A', 'B', 'C'];
  const progress = emptyProgress();
  const conflictKeys: string[] = [];
  const client = await connect(db);
  let claimClient: pg.Client | undefined;
  let engine: Engine | undefined;
  try {
    const target = await inspectTable(client, { table: options.table, key: options.key, map: options.map, mode, where: options.where, write: !options.dryRun });
    const makeEngine = (): Engine =>
      createEngine({
        ...options.engine, mode, baseUrl: options.baseUrl, realtimeUrl: options.realtimeUrl, apiKey: options.apiKey,
        defaultCountry: options.country, include: options.include, policy: acceptPolicy(accept), logger,
      });
    const base = { table: target.qualified, conflictKeys };
    const rounded = (): CleanseProgress => {
      const t = progress.timings;
      return { ...copy(progress), timings: { readMs: Math.round(t.readMs), validateMs: Math.round(t.validateMs), writeMs: Math.round(t.writeMs) } };
    };

    if (options.dryRun) {
      engine = makeEngine();
      await dryRun(engine, new PageStore(client, target, options.where), target, mode, batchSize, progress, options);
      const exitCode = exitCodeForReport(engine.report(), { maxFailed: options.maxFailed ?? 0 });
      return { ...base, ...rounded(), runId: null, dryRun: true, state: 'dry-run', exitCode };
    }

    await ensureSchema(client);
    const settings = { mode, country: options.country, accept, where: options.where, include: options.include };
    const run = await openRun(client, target, settings, options.runId ?? newRunId(), batchSize * pagesPerClaim);
    const summary = (state: CleanseSummary['state'], exitCode: number, error?: CleanseSummary['error']): CleanseSummary => ({
      ...base, ...rounded(), runId: run.runId, dryRun: false, state, exitCode, ...(error ? { error } : {}),
    });
    if (run.state === 'done' || run.state === 'rolled-back') return summary(run.state, ExitCode.OK);

    engine = makeEngine();
    claimClient = await connect(db, 'dq-pg claim');
    const queue = new RangeQueue(claimClient, run.runId, target);
    const store = new PageStore(client, target, options.where);
    const worker = `${hostname()}:${process.pid}:${randomBytes(2).toString('hex')}`;
    const ctx = { engine, store, target, mode, batchSize, worker, runId: run.runId, progress, conflictKeys, logger, options };
    try {
      for (let range = await queue.claim(); range !== null; range = await queue.claim()) {
        await workRange(ctx, range);
        if (options.signal?.aborted) {
          throw new RunHalt({ code: 'interrupted', message: `interrupted; rerun with --run-id ${run.runId} to resume` }, ExitCode.TEMPFAIL);
        }
      }
    } catch (e) {
      const halt = e instanceof RunHalt ? e : isRunStop(e) ? new RunHalt(stopData(e), ExitCode.STOP) : undefined;
      if (!halt) throw e;
      await queue.release().catch(() => undefined);
      await stopRun(client, run.runId, halt.error);
      logger.error('run stopped', { runId: run.runId, ...halt.error });
      return summary('stopped', halt.exitCode, halt.error);
    }
    const done = await finishRun(client, run.runId);
    return summary(done ? 'done' : 'running', exitCodeForReport(engine.report(), { maxFailed: options.maxFailed ?? 0 }));
  } finally {
    await engine?.close().catch(() => undefined);
    await claimClient?.end().catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

function stopData(e: DqError): { code: string; message: string; requestId?: string } {
  return { code: e.code, message: e.message, ...(e.requestId ? { requestId: e.requestId } : {}) };
}

interface WorkContext {
  engine: Engine;
  store: PageStore;
  target: TargetTable;
  mode: Mode;
  batchSize: number;
  worker: string;
  runId: string;
  progress: CleanseProgress;
  conflictKeys: string[];
  logger: Logger;
  options: CleanseOptions;
}

/** Works one claimed range page by page from its checkpoint until it is done (or taken over). */
async function workRange(ctx: WorkContext, range: ClaimedRange): Promise<void> {
  const { engine, store, target, progress } = ctx;
  let last = range.lastKey;
  for (;;) {
    const t0 = performance.now();
    const rows = await store.read(last, range.hi, ctx.batchSize);
    const t1 = performance.now();
    const calls = engine.report().apiCalls;
    const results = rows.length === 0 ? [] : await engine.process(rows.map((r) => toRecord(r, target.columns)));
    const t2 = performance.now();
    const plan = planPage(ctx.mode, target.columns, rows, results, engine.report().apiCalls - calls);
    const answerable = rows.length - plan.counts.invalidInput;
    if (plan.counts.unavailable > 0 && plan.counts.unavailable === answerable) {
      // The platform answered none of the page: keep the page unwritten for the resumed run.
      const first = results.find((r) => r.status === 'unavailable')?.error;
      throw new RunHalt(
        { code: 'service-unavailable', message: `every row of the page after key ${last ?? '(start)'} came back unavailable (${first?.code ?? 'unknown'}); rerun with --run-id ${ctx.runId} later`, ...(first?.requestId ? { requestId: first.requestId } : {}) },
        ExitCode.TEMPFAIL,
      );
    }
    const done = rows.length < ctx.batchSize;
    const lastKey = rows.at(-1)?.key ?? last;
    const res = await store.commit(ctx.runId, ctx.worker, rows.length > 0 ? plan.write : null, {
      rangeNo: range.rangeNo, prevKey: last, lastKey, done, counts: plan.counts,
    });
    progress.timings.readMs += t1 - t0;
    progress.timings.validateMs += t2 - t1;
    progress.timings.writeMs += performance.now() - t2;
    if (res.taken) {
      ctx.logger.warn('key range taken over by another process; its page was not written', { runId: ctx.runId, range: range.rangeNo });
      return;
    }
    progress.rows += rows.length;
    progress.written += res.written;
    progress.unchanged += plan.counts.unchanged;
    progress.conflicts += res.conflicts.length;
    progress.apiCalls += plan.counts.apiCalls;
    for (const r of results) progress.byStatus[r.status] += 1;
    for (const k of res.conflicts) if (ctx.conflictKeys.length < MAX_CONFLICT_KEYS) ctx.conflictKeys.push(k);
    if (res.conflicts.length > 0) ctx.logger.warn('rows changed by someone else since they were read were not written', { runId: ctx.runId, keys: res.conflicts.slice(0, 20), count: res.conflicts.length });
    ctx.options.onPage?.(copy(progress));
    last = lastKey;
    if (done || ctx.options.signal?.aborted) return;
  }
}

/** Reads and validates the whole selection, writes nothing, reports each row that would change. */
async function dryRun(
  engine: Engine, store: PageStore, target: TargetTable, mode: Mode, batchSize: number, progress: CleanseProgress, options: CleanseOptions,
): Promise<void> {
  let last: string | null = null;
  for (;;) {
    if (options.signal?.aborted) return;
    const t0 = performance.now();
    const rows = await store.read(last, null, batchSize);
    progress.timings.readMs += performance.now() - t0;
    if (rows.length === 0) return;
    const calls = engine.report().apiCalls;
    const t1 = performance.now();
    const results = await engine.process(rows.map((r) => toRecord(r, target.columns)));
    progress.timings.validateMs += performance.now() - t1;
    const plan = planPage(mode, target.columns, rows, results, engine.report().apiCalls - calls);
    rows.forEach((row, i) => {
      const decision = plan.decisions[i];
      if (decision?.outcome !== 'write') return;
      const before = Object.fromEntries(target.columns.map((c, j) => [c.column, row.values[j] ?? null]));
      const after = Object.fromEntries(target.columns.map((c, j) => [c.column, decision.after[j] ?? null]));
      const resultClass = results[i]?.resultClass;
      options.onChange?.({ key: row.key, before, after, ...(resultClass ? { resultClass } : {}) });
    });
    progress.rows += rows.length;
    progress.written += plan.changes;
    progress.unchanged += plan.counts.unchanged;
    progress.apiCalls += plan.counts.apiCalls;
    for (const r of results) progress.byStatus[r.status] += 1;
    options.onPage?.(copy(progress));
    if (rows.length < batchSize) return;
    last = rows.at(-1)?.key ?? last;
  }
}

/** The exit code for an error thrown by {@link cleanse}, {@link rollback} or {@link status}. */
export function exitCodeFor(e: unknown): number {
  if (e instanceof CleanseError) return e.exitCode;
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string' && (/^(08|57P)/.test(code) || ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT'].includes(code))) return ExitCode.TEMPFAIL;
  return exitCodeForError(e);
}
