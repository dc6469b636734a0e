import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { answeringPlatform, createEngine, createLogger, DqError, exitCodeFor, ExitCode, isRunStop, stopAdvice } from '@dq/core';
import { autoMappingHint, resolvePolicy, unmappedLookalikes, zeroByStatus } from '@dq/core/engine';
import { RESULT_CLASSES } from '@dq/core/schemas';
import { DEFAULT_MAX_AGE_MS, openStore, StoreError } from '@dq/core/store';
import type { Engine, Mode, PolicyStatus, RecordResult, ResultClass, RunReport } from '@dq/core';
import { ensureSchema, STATE_SCHEMA } from './bookkeeping.js';
import { connect, dbTarget, disconnect, keyFromText, sessionLost } from './db.js';
import { columnGenerated, connectionLost, definitionChanged, privilegeLost, relationGone, usageError } from './errors.js';
import { DEFAULT_BATCH_SIZE, DEFAULT_PAGES_PER_CLAIM, DEFAULT_WORKERS } from './options.js';
import type { CleanseOptions, CleanseProgress, CleanseSummary, DryRunSummary } from './options.js';
import { allInvalidHint } from './mapping-hints.js';
import { planPage } from './page-plan.js';
import { knownInUse, PageStore } from './page-store.js';
import { inspectTable } from './preflight.js';
import type { TargetTable } from './preflight.js';
import { emptyTally, validateRows, withReused } from './known-rows.js';
import type { ReusedTally } from './known-rows.js';
import type { KnownRows } from './page-store.js';
import { finishRun, holdRun, knownScopes, newRunId, openRunAlone, runTotals, stopRun } from './runs.js';
import type { RunTotals } from './runs.js';
import { RunHalt, workRange } from './range-worker.js';
import type { WorkContext } from './range-worker.js';
import { RangeQueue } from './work-queue.js';

/** The engine policy for `--accept`: listed classes are accepted, the others keep review/invalid. */
export function acceptPolicy(accept: readonly ResultClass[]): Record<ResultClass, PolicyStatus> {
  const base = resolvePolicy();
  return Object.fromEntries(RESULT_CLASSES.map((c) => [c, accept.includes(c) ? 'accepted' : base[c] === 'accepted' ? 'review' : base[c]])) as Record<
    ResultClass,
    PolicyStatus
  >;
}

function copy(p: CleanseProgress): CleanseProgress {
  return { ...p, byStatus: { ...p.byStatus }, timings: { ...p.timings } };
}

function emptyProgress(): CleanseProgress {
  return {
    rows: 0,
    written: 0,
    unchanged: 0,
    conflicts: 0,
    apiCalls: 0,
    callsSavedByDedup: 0,
    callsSavedByCache: 0,
    callsSavedByStore: 0,
    storeHitRate: 0,
    retries: 0,
    byStatus: zeroByStatus(),
    timings: { readMs: 0, validateMs: 0, writeMs: 0 },
  };
}

/**
 * Cleans the mapped columns of a table in place. Pre-flight checks run before any API
 * call and throw {@link CleanseError}s. Then pages of `batchSize` rows are read in key order from
 * claimed key ranges, validated by the engine and written with their audit, results and checkpoint
 * in one transaction each. Several processes with the same `runId` share the ranges; rerunning a
 * run resumes it where its last committed page ended.
 *
 * A stop during the work (quota, credentials: exit 3; platform down, interrupt: 75) is returned
 * in the summary with the run left `stopped` and consistent. Database failures are thrown; once the
 * run was recorded, {@link summaryOfFailure} gives the thrown error's summary (the CLI prints it).
 */
export async function cleanse(options: CleanseOptions & { dryRun: true }): Promise<DryRunSummary>;
export async function cleanse(options: CleanseOptions & { dryRun?: false }): Promise<CleanseSummary>;
export async function cleanse(options: CleanseOptions): Promise<CleanseSummary | DryRunSummary>;
export async function cleanse(options: CleanseOptions): Promise<CleanseSummary | DryRunSummary> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  logger.redactor.add(options.apiKey);
  const db = dbTarget(options.db, logger.redactor);
  const mode: Mode = options.mode ?? 'address';
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const pagesPerClaim = options.pagesPerClaim ?? DEFAULT_PAGES_PER_CLAIM;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000)
    throw usageError('--batch-size', `${batchSize} must be an integer from 1 to 100000`);
  if (!Number.isInteger(pagesPerClaim) || pagesPerClaim < 1) throw usageError('--pages-per-claim', `${pagesPerClaim} must be a positive integer`);
  const workers = options.workers ?? DEFAULT_WORKERS;
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) throw usageError('--workers', `${workers} must be an integer from 1 to 64`);
  const readAhead = options.readAhead ?? false;
  const accept = options.accept ?? ['A', 'B', 'C'];
  const progress = emptyProgress();
  const reused = emptyTally();
  const conflictKeys: string[] = [];
  const notWritten = { count: 0, keys: [] as string[] };
  // --dry-run writes nothing to the table or dq_cleanse: it may read a standby.
  const client = await connect(db, 'dq-pg', { writes: !options.dryRun });
  const connections: pg.Client[] = [];
  /** --store names a store apart from --db (a folder, another database): its failures are its own. */
  const storeApart = options.engine?.store !== undefined;
  const slots: WorkerSlot[] = [];
  let engine: Engine | undefined;
  let runId: string | undefined;
  /** Whether the run is recorded in dq_cleanse.runs: a failure after that is recorded with it. */
  let recorded = false;
  /** The run's summary as of now, once the run is recorded: also that of a failure ({@link summaryOfFailure}). */
  let summarize: ((state: CleanseSummary['state'], exitCode: number, error?: CleanseSummary['error']) => CleanseSummary) | undefined;
  let cut: PageCut | undefined;
  try {
    const target = await inspectTable(client, {
      table: options.table,
      key: options.key,
      map: options.map,
      mode,
      where: options.where,
      write: !options.dryRun,
      statusColumns: options.statusColumns,
    });
    const hint = options.onHint ?? ((text: string) => logger.warn(text));
    const lookalikes = unmappedLookalikes(mode, target.columnNames ?? [], target.columns);
    if (options.map === undefined && lookalikes.length > 0) hint(autoMappingHint(mode, target.qualified, target.columns, lookalikes));
    let firstPage = true;
    const userOnPage = options.onPage;
    const onPage = (p: CleanseProgress): void => {
      if (firstPage && p.rows > 0) {
        firstPage = false;
        if (p.byStatus['invalid-input'] === p.rows) hint(allInvalidHint(mode, p.rows, target.columns, lookalikes));
      }
      userOnPage?.(p);
    };
    options = { ...options, onPage };
    const makeEngine = async (): Promise<Engine> => {
      // The result store: by default a table of this database (schema dq_store), on a connection
      // of its own, so a later run (a new run id, another machine) does not pay again for answers
      // it has; --store names another (a folder, another database) or turns it off.
      const { store, maxAgeMs, ...engineSettings } = options.engine ?? {};
      let defaultDb: { db: pg.Client; location: string; initCommand: string } | undefined;
      if (store === undefined) {
        const storeClient = await connect(db, 'dq-pg store');
        connections.push(storeClient);
        defaultDb = { db: storeClient, location: `${db.where} (schema dq_store)`, initCommand: 'dq-pg init' };
      }
      const resultStore = await openStore(store, { maxAgeMs, defaultDb });
      return createEngine({
        ...engineSettings,
        mode,
        baseUrl: options.baseUrl,
        realtimeUrl: options.realtimeUrl,
        apiKey: options.apiKey,
        defaultCountry: options.country,
        include: options.include,
        policy: acceptPolicy(accept),
        logger,
        resultStore,
      });
    };
    const base = { table: target.qualified, conflictKeys };
    const statusColumns = target.status.length > 0 ? Object.fromEntries(target.status.map((c) => [c.field, c.column])) : undefined;
    const platform = answeringPlatform(mode, options.baseUrl, options.realtimeUrl);
    const storeOff = options.engine?.store === 'off';
    const settings = { mode, country: options.country, accept, where: options.where, include: options.include, statusColumns, platform, storeOff };
    // Rows this run corrects are recorded as known; rows an earlier run corrected and that still
    // hold what it wrote reuse its answer: no call, no write (not with --max-age 0). With --store
    // off nothing is kept for later runs, as no answer is stored: no known rows recorded or reused.
    const [scope, scopeBefore] = knownScopes(target, settings);
    const known: KnownRows | undefined = storeOff ? undefined : { scope, scopeBefore, maxAgeMs: options.engine?.maxAgeMs ?? DEFAULT_MAX_AGE_MS };
    // Said by every run that ends with exit 4 for unavailable rows, the first one too, as a line of
    // its own whose --where a POSIX shell takes as printed (README "Limits and choices").
    const hintUnavailable = (id: string, totals: RunTotals): void => {
      const earlier = totals.unavailable - progress.byStatus.unavailable;
      const where = `${target.key.quoted} IN (SELECT ${keyFromText('row_key', target.key.type)} FROM ${STATE_SCHEMA}.results WHERE run_id = '${id.replace(/'/g, "''")}' AND status = 'unavailable')`;
      hint(
        `${totals.unavailable} of the ${totals.rows} rows of run ${id} are unavailable (the platform failed for them after retries)${earlier > 0 ? `, ${earlier} of them from an earlier attempt of the run` : ''}; a rerun with --run-id ${id} does not check them again. A new run restricted to them redoes them: the same command with --run-id <new id> --where ${shellQuoted(where)}`,
      );
    };
    const report = (): RunReport | undefined => (engine ? withReused(engine.report(), reused) : undefined);
    const rounded = (): CleanseProgress => {
      const t = progress.timings;
      const r = report();
      // The calls this process made, also those of a page a stop cut short before it was written
      // (the pages' own counts, which dq-pg status sums, hold only the pages written).
      const saved = r
        ? {
            apiCalls: r.apiCalls,
            callsSavedByDedup: r.callsSavedByDedup,
            callsSavedByCache: r.callsSavedByCache,
            callsSavedByStore: r.callsSavedByStore,
            storeHitRate: r.storeHitRate,
            retries: r.retries,
          }
        : {};
      return { ...copy(progress), ...saved, timings: { readMs: Math.round(t.readMs), validateMs: Math.round(t.validateMs), writeMs: Math.round(t.writeMs) } };
    };

    if (options.dryRun) {
      engine = await makeEngine();
      // A dry run creates nothing: it reuses known rows only where the bookkeeping already has them.
      const knownTable = await client.query<{ ok: boolean }>(`SELECT to_regclass('${STATE_SCHEMA}.known') IS NOT NULL AS ok`);
      const reader = new PageStore(client, target, options.where, client, knownTable.rows[0]?.ok ? await knownInUse(client, known) : undefined);
      cut = pageCut(options.signal, options.stopNow, new Error('interrupted'));
      const complete = await dryRun(engine, reader, target, mode, batchSize, progress, reused, options, cut.signal);
      const { written, conflicts: _none, ...counts } = rounded();
      const dry = { table: target.qualified, ...counts, runId: null, dryRun: true as const, state: 'dry-run' as const, wouldWrite: written };
      // Stopped by a signal: its counts cover the rows read so far, not the table (exit 75: run it again).
      if (!complete) {
        const error = {
          code: 'interrupted',
          message: `interrupted after ${progress.rows} rows; the dry run's counts and changes cover only those: run it again for the whole table`,
        };
        return { ...dry, exitCode: ExitCode.TEMPFAIL, error };
      }
      return { ...dry, exitCode: exitCodeFor({ report: report()!, maxFailed: options.maxFailed ?? 0 }) };
    }

    await ensureSchema(client);
    // The engine and its result store before the run is recorded: a store that cannot be opened
    // stops the command without leaving a run that never started (an "interrupted" one in status).
    engine = await makeEngine();
    runId = options.runId ?? newRunId();
    await holdRun(client, runId);
    const run = await openRunAlone(client, target, settings, runId, batchSize * pagesPerClaim);
    recorded = true;
    const summary = (summarize = (state: CleanseSummary['state'], exitCode: number, error?: CleanseSummary['error'], totals?: RunTotals): CleanseSummary => ({
      ...base,
      ...rounded(),
      runId: run.runId,
      dryRun: false,
      notWritten: notWritten.count,
      notWrittenKeys: notWritten.keys,
      state,
      exitCode,
      ...(totals ? { runTotals: totals } : {}),
      ...(error ? { error } : {}),
      ...(engine?.report().budget ? { budget: engine.report().budget } : {}),
    }));
    // A run ends with the exit code of all its rows, those of earlier attempts too: a scheduler's
    // retry of a run that exited 4 does not turn it into a success (README "Exit codes").
    const ended = async (state: 'done' | 'running'): Promise<CleanseSummary> => {
      const totals = await runTotals(client, run.runId);
      const exitCode = wholeRunExitCode(report()!, totals, options.maxFailed ?? 0);
      if (exitCode === ExitCode.MAX_FAILED && totals.unavailable > 0) hintUnavailable(run.runId, totals);
      return summary(state, exitCode, undefined, totals);
    };
    if (run.state === 'rolled-back') return summary(run.state, ExitCode.OK);
    if (run.state === 'done') return await ended('done');

    const inUse = await knownInUse(client, known);
    const processId = `${hostname()}:${process.pid}:${randomBytes(2).toString('hex')}`;
    const shared = { engine, target, mode, batchSize, readAhead, runId: run.runId, progress, reused, conflictKeys, notWritten, logger, options };
    // Each range worker gets connections of its own: one holding its claim, one reading, one
    // writing. Opened before any range is claimed. `client` holds the run (holdRun) and does the
    // run's own bookkeeping only: it is idle while the workers work, and its loss is seen by the
    // workers before each page (sessionLost), whichever of them holds the ranges.
    for (let i = 0; i < workers; i += 1) {
      const claim = await connect(db, 'dq-pg claim');
      connections.push(claim);
      const reader = await connect(db, 'dq-pg read');
      connections.push(reader);
      const writer = await connect(db, 'dq-pg write');
      connections.push(writer);
      const worker = workers === 1 ? processId : `${processId}/${i + 1}`;
      slots.push({ queue: new RangeQueue(claim, run.runId, target), store: new PageStore(reader, target, options.where, writer, inUse), worker });
    }
    const interrupted = (what: string): RunHalt =>
      new RunHalt({ code: 'interrupted', message: `stopped by a signal ${what}; rerun with --run-id ${run.runId} to resume` }, ExitCode.TEMPFAIL);
    cut = pageCut(
      options.signal,
      options.stopNow,
      interrupted(
        'before the pages under way were written (the answers that had arrived are kept in the result store: the resumed run does not pay for them again)',
      ),
    );
    // The sessions the workers hold without querying them (README "What a run does").
    const gone = (e: unknown, whose: string): unknown =>
      e === undefined ? undefined : connectionLost(e, db.where, `${whose} ended; the run keeps what it committed: rerun with --run-id ${run.runId} to resume`);
    const lost = (queue: RangeQueue): unknown =>
      gone(queue.lost(), "the session holding this process's claim on a key range (another process may take the range over)") ??
      gone(sessionLost(client), `the session holding run ${run.runId}`);
    const error = await runWorkers({ ...shared, cut: cut.signal, lost }, slots, options.signal, interrupted('after the pages under way were written'));
    if (error !== undefined) {
      // A run stop: exit 3 for key, account or quota; 75 when the platform could not be reached or
      // asked us to come back later than the retry policy waits. A failure of a --store apart from
      // --db stops the run the same way (its summary, the run recorded as stopped, the rerun to
      // type); the store in --db's own schema fails with the database (db-unreachable, below).
      const stop = isRunStop(error) || (storeApart && error instanceof StoreError) ? error : undefined;
      const halt = error instanceof RunHalt ? error : stop ? new RunHalt(stopData(stop, run.runId), exitCodeFor(stop)) : undefined;
      if (!halt) throw error;
      await Promise.all(slots.map((q) => q.queue.release().catch(() => undefined)));
      await stopRun(client, run.runId, halt.error);
      logger.error('run stopped', { runId: run.runId, ...halt.error });
      return summary('stopped', halt.exitCode, halt.error);
    }
    const done = await finishRun(client, run.runId);
    return await ended(done ? 'done' : 'running');
  } catch (e) {
    // Every page committed with its checkpoint, so the run resumes where the connection went.
    const then = runId === undefined ? 'retry later' : `the run keeps what it committed: rerun with --run-id ${runId} to resume`;
    const lost = connectionLost(e, db.where, then, storeApart);
    const resume = runId === undefined ? 'Then run again.' : `The run keeps what it committed: then rerun with --run-id ${runId}.`;
    const changed = definitionChanged(
      lost,
      options.table,
      runId === undefined ? 'run again' : `the run keeps what it committed: rerun with --run-id ${runId} to resume with the new definition`,
    );
    const generated = columnGenerated(
      changed,
      options.table,
      runId === undefined
        ? 'Take it out of --map or --status-columns.'
        : `The run keeps what it committed; take the column out of --map or --status-columns and start a new run (a run keeps the columns it began with, so --run-id ${runId} cannot go on).`,
    );
    const failure = privilegeLost(
      relationGone(
        generated,
        options.table,
        runId === undefined
          ? 'Check --table and --map.'
          : `The run keeps what it committed: rerun with --run-id ${runId} once the table is back under its name and columns.`,
      ),
      options.table,
      db.user,
      resume,
    );
    // `dq-pg status` then says why the run ended, not just that no session holds it.
    if (recorded && runId !== undefined) {
      const kept = await recordFailure(client, runId, failure, logger.redactor.redact.bind(logger.redactor));
      if (summarize && typeof failure === 'object' && failure !== null) {
        const error = failureData(failure, logger.redactor.redact.bind(logger.redactor));
        failedRuns.set(failure, summarize(kept ? 'stopped' : 'interrupted', exitCodeFor(failure), error));
      }
    }
    throw failure;
  } finally {
    cut?.dispose();
    if (engine) options.onEngineReport?.(withReused(engine.report(), reused));
    await engine?.close().catch(() => undefined);
    await Promise.all(connections.map((c) => disconnect(c)));
    await disconnect(client);
  }
}

/**
 * Records a run that failed (the table changed, a lock waited too long, a bug) as stopped with its
 * error, as a run stop is, on the connection that holds it when that still works. At most 5 s: a
 * database that no longer answers leaves the run as it is (`status` shows it interrupted).
 */
async function recordFailure(client: pg.Client, runId: string, failure: unknown, redact: (text: string) => string): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 5_000)));
  // A statement of the run's own bookkeeping the failure cut short may have left its transaction open on this connection.
  const record = async (): Promise<boolean> => {
    await client.query('ROLLBACK');
    await stopRun(client, runId, failureData(failure, redact));
    return true;
  };
  const kept = await Promise.race([record().catch(() => false), bound]);
  clearTimeout(timer);
  return kept;
}

/** A failure as the summary and `dq_cleanse.runs` record it: its code (`unexpected` for a bug) and message. */
function failureData(failure: unknown, redact: (text: string) => string): { code: string; message: string } {
  return { code: failure instanceof DqError ? failure.code : 'unexpected', message: redact(failure instanceof Error ? failure.message : String(failure)) };
}

/** The summaries of runs that failed after they were recorded, by the error {@link cleanse} threw. */
const failedRuns = new WeakMap<object, CleanseSummary>();

/**
 * The summary of the run that `e`, thrown by {@link cleanse}, ended (its counts so far, the state
 * it is left in — `stopped` with the error, or `interrupted` when the database could not record
 * even that — and the error): the CLI prints it as for any run (README "Exit codes"). Undefined for
 * an error thrown before the run was recorded (pre-flight, connecting).
 */
export function summaryOfFailure(e: unknown): CleanseSummary | undefined {
  return typeof e === 'object' && e !== null ? failedRuns.get(e) : undefined;
}

/**
 * How long the pages under way may go on with their calls after a stop (`signal`: SIGINT, SIGTERM)
 * before they are cut, not written: a page's calls normally end within seconds and the page is
 * written, while a platform that hangs (calls timing out, then retried) would hold the stop for
 * minutes (README "What a run does").
 */
export const STOP_GRACE_MS = 10_000;

/** Aborts the engine work of the pages under way; `dispose` ends its watch of the stop signals. */
interface PageCut {
  signal: AbortSignal;
  dispose: () => void;
}

/** A {@link PageCut} that fires {@link STOP_GRACE_MS} after `stop`, or at once when `now` fires, with `reason`. */
function pageCut(stop: AbortSignal | undefined, now: AbortSignal | undefined, reason: unknown): PageCut {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const abort = (): void => controller.abort(reason);
  const soon = (): void => void (timer ??= setTimeout(abort, STOP_GRACE_MS));
  if (stop?.aborted) soon();
  else stop?.addEventListener('abort', soon, { once: true });
  if (now?.aborted) abort();
  else now?.addEventListener('abort', abort, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      stop?.removeEventListener('abort', soon);
      now?.removeEventListener('abort', abort);
    },
  };
}

/** `text` as one word of a POSIX shell command line (single-quoted), to be pasted as it is printed. */
export function shellQuoted(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The exit code of a run that completed, judged on the whole run's `totals` (every process and
 * attempt of it) with `--max-failed`. Exit 75 ("retry later") only when this process's own rows all
 * came back unavailable (the platform down now): rows an earlier attempt left unavailable are not
 * checked again by a rerun, so for them the run is done with failures (4), never worth a retry.
 */
export function wholeRunExitCode(own: RunReport, totals: RunTotals, maxFailed: number): ExitCode {
  if (exitCodeFor({ report: own, maxFailed }) === ExitCode.TEMPFAIL) return ExitCode.TEMPFAIL;
  const byStatus = { ...zeroByStatus(), unavailable: totals.unavailable, 'invalid-input': totals.invalidInput };
  const whole = exitCodeFor({ report: { records: totals.rows, byStatus }, maxFailed });
  return whole === ExitCode.TEMPFAIL ? ExitCode.MAX_FAILED : whole;
}

/** One range worker's claim queue and page store. */
interface WorkerSlot {
  queue: RangeQueue;
  store: PageStore;
  worker: string;
}

/**
 * Runs the range workers until no range is left to claim, or one of them halts or fails; then the
 * others stop after the page they are writing. Returns the first error (undefined when all ran out
 * of ranges).
 */
async function runWorkers(
  shared: Omit<WorkContext, 'store' | 'worker' | 'stopping' | 'sessionLost'> & { lost: (queue: RangeQueue) => unknown },
  slots: readonly WorkerSlot[],
  signal: AbortSignal | undefined,
  interrupted: RunHalt,
): Promise<unknown> {
  let failure: { error: unknown } | undefined;
  const { lost, ...context } = shared;
  const stopping = (): boolean => failure !== undefined || signal?.aborted === true || shared.cut.aborted;
  await Promise.all(
    slots.map(async (slot) => {
      const ctx: WorkContext = { ...context, store: slot.store, worker: slot.worker, stopping, sessionLost: () => lost(slot.queue) };
      try {
        for (;;) {
          if (signal?.aborted || shared.cut.aborted) throw interrupted;
          if (failure !== undefined) return;
          const range = await slot.queue.claim();
          if (range === null) return;
          await workRange(ctx, range);
        }
      } catch (e) {
        failure ??= { error: e };
      }
    }),
  );
  return failure?.error;
}

/** A run stop as dq-pg prints and records it (`dq-pg status`): the error, then what to do now (core's stopAdvice). */
function stopData(e: DqError, runId: string): { code: string; message: string; requestId?: string } {
  const { advice } = stopAdvice(e, { resume: `rerun with --run-id ${runId}`, kept: 'the run keeps what it committed' });
  return { code: e.code, message: `${e.message}; ${advice}`, ...(e.requestId ? { requestId: e.requestId } : {}) };
}

/**
 * Reads and validates the whole selection, writes nothing, reports each row that would change.
 * Returns false when the abort signal stopped it before the end of the selection (or `cut` the
 * page under way).
 */
async function dryRun(
  engine: Engine,
  store: PageStore,
  target: TargetTable,
  mode: Mode,
  batchSize: number,
  progress: CleanseProgress,
  reused: ReusedTally,
  options: CleanseOptions,
  cut: AbortSignal,
): Promise<boolean> {
  let last: string | null = null;
  for (;;) {
    if (options.signal?.aborted || cut.aborted) return false;
    const t0 = performance.now();
    const rows = await store.read(last, null, batchSize);
    progress.timings.readMs += performance.now() - t0;
    if (rows.length === 0) return true;
    const calls = engine.report().apiCalls;
    const t1 = performance.now();
    let results: RecordResult[];
    try {
      results = await validateRows(engine, rows, target.columns, reused, cut);
    } catch (e) {
      if (cut.aborted && e === cut.reason) return false;
      throw e;
    }
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
    if (rows.length < batchSize) return true;
    last = rows.at(-1)?.key ?? last;
  }
}
