import { createHash } from 'node:crypto';
import { DqError, errorFromData, LOCAL_CODES } from '../errors/index.js';
import { createLogger } from '../log/index.js';
import type { Logger } from '../log/index.js';
import { callsSent, createCallCounter, createSharedThrottle, DEFAULT_RATE_LIMITS, MAX_CALLS_REACHED, probeBudget } from '../throttle/index.js';
import { checkSharedKey, keyIdOf } from '../throttle/index.js';
import type { BudgetSpec, CallCounter } from '../throttle/index.js';
import { resolveEngineConfig } from './config.js';
import type { EngineConfig, ResolvedEngineConfig } from './config.js';
import { localRefusal, localViolations } from './local-checks.js';
import { openLogRelay } from './log-relay.js';
import type { LogRelay } from './log-relay.js';
import { createMemoryCache } from './memory-cache.js';
import { Control, DRAINING } from './messages.js';
import type { CallOutcome, TaskResult, WorkerInit } from './messages.js';
import { mapRecord, requestKey } from './record-mapping.js';
import { answeringPlatform } from './platform.js';
import type { RequestFields } from './record-mapping.js';
import { OutageWatch, type Verdict } from './outage-watch.js';
import { PendingCall } from './pending-call.js';
import { RunReportBuilder } from './run-report.js';
import { createCallPool, type CallPool } from './worker-pool.js';
import type { ResultStore } from '../store/types.js';
import type { CachedResult, Engine, EngineRecord, PlanOptions, ProcessOptions, RecordResult, ResultCache, RunPlan, RunReport } from './types.js';

type Source = RecordResult['source'];
/** Distinct inputs of one batch: request fields and the positions of the records sharing them. */
type Group = { key: string; fields: RequestFields; indices: number[] };
type Settled = { group: Group; source: Source; outcome: CallOutcome };

/**
 * Creates the validation engine (docs/architecture.md "One engine, three adapters"): records are mapped
 * to requests, refused locally when they break the contract's rules, deduplicated by normalised
 * input (within and across batches, and through the cache), called in a piscina pool whose workers
 * share one throttle, and answered in input order with the result policy applied.
 *
 * @throws DqError `config-invalid` naming every bad option.
 */
export function createEngine(config: EngineConfig): Engine {
  const resolved = resolveEngineConfig(config);
  const logger = config.logger ?? createLogger({ level: 'info' });
  logger.redactor.add(resolved.apiKey);
  const cache = config.cache ?? createMemoryCache(config.resultStore ? { maxEntries: CACHE_BESIDE_STORE } : {});
  return new ValidationEngine(resolved, cache, config.resultStore, logger);
}

/**
 * Entries of the run's own cache when a result store holds every answer anyway: repeats beyond
 * them are answered by the store (a lookup in its memory-mapped file, no call). The default 100 000
 * would hold a second copy of up to 100 000 answers on the heap (about 0.7 KB each, measured), so
 * a run's memory would grow with its first 100 000 rows instead of levelling off after 10 000.
 */
const CACHE_BESIDE_STORE = 10_000;

/** The form of request keys (record-mapping.ts `requestKey`): values exactly as sent. Part of every key's scope. */
const KEY_FORMAT = 'exact-values';

class ValidationEngine implements Engine {
  readonly #cfg: ResolvedEngineConfig;
  readonly #cache: ResultCache;
  /** The result store: answers of earlier runs and other processes, asked once per batch. */
  readonly #store: ResultStore | undefined;
  readonly #logger: Logger;
  readonly #pool: CallPool;
  readonly #report: RunReportBuilder;
  readonly #logRelay: LogRelay;
  /** Scope part of every key: settings that change the platform's answer for the same fields. */
  readonly #scope: string;
  /** Calls in flight by key, so a later batch joins a call instead of repeating it. */
  readonly #inflight = new Map<string, PendingCall>();
  /** Control words of the batches running now; a run stop sets them all. */
  readonly #running = new Set<Int32Array>();
  #stopped: Error | undefined;
  /** Tells an outage of the platform from a call that failed on its own. */
  readonly #outage = new OutageWatch();
  /** Chunks handed to the pool and not yet answered. */
  #chunksOut = 0;
  /** Batches failed by an outage, with its error; later batches may try again. */
  readonly #interrupted = new WeakMap<Int32Array, Error>();
  #closing: Promise<void> | undefined;
  /** Billable calls sent by every thread, against the spending cap. */
  readonly #calls: CallCounter;
  /** Store writes issued and not yet committed, with how many answers each holds; a batch returns only once they are ({@link #storeCommitted}). */
  readonly #storeWrites = new Map<Promise<void>, number>();
  /**
   * `[0]`: answers whose store write is not committed yet, shared with the call runners: a call
   * waits while it is at {@link storeBacklogLimit} (the engine's concurrency), so a store that
   * stalls holds the calls back, and a store that then fails loses at most that many answers plus
   * the calls in flight, instead of every answer bought while it hung.
   */
  readonly #storeBacklog = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  /**
   * The first store write that failed: the run stops with it ({@link #storeFailed}), and every
   * batch still running or started later fails with it (their answers could not be kept).
   */
  #storeFailure: unknown;
  /** The check of {@link ready}, made once. */
  #ready: Promise<void> | undefined;
  /** Where the rate budget lives, and the API key's digest it records. */
  readonly #budget: BudgetSpec;
  /** The check that the API key is not in use under another account of the shared budget, made once (see `checkSharedKey`). */
  #keyCheck: Promise<void> | undefined;

  constructor(cfg: ResolvedEngineConfig, cache: ResultCache, store: ResultStore | undefined, logger: Logger) {
    this.#cfg = cfg;
    this.#cache = cache;
    this.#store = store;
    this.#logger = logger;
    const endpoint = cfg.mode === 'address' ? cfg.addressEndpoint : 'company';
    this.#report = new RunReportBuilder(cfg.maxReportedFailures, cfg.rateLimits[endpoint] ?? DEFAULT_RATE_LIMITS[endpoint]);
    // A digest: the scope is part of every key, and a short key is cheaper to hash and to keep.
    // The platform that answers is part of it: a store never hands one platform's answers (the
    // sandbox's, say) to a run against another (docs/architecture.md "The result store").
    // KEY_FORMAT: keys of earlier versions folded case and spacing (an answer shared by questions
    // the platform answers differently); none of their entries may answer under today's keys.
    const settings = [KEY_FORMAT, cfg.mode, cfg.addressEndpoint, [...(cfg.include ?? [])].sort(), cfg.company];
    this.#scope = createHash('sha256')
      .update(JSON.stringify([...settings, answeringPlatform(cfg.mode, cfg.baseUrl, cfg.realtimeUrl)]))
      .digest('base64url')
      .slice(0, 16);
    const throttle = createSharedThrottle({ limits: cfg.rateLimits, maxHoldMs: cfg.retry?.maxRetryAfterMs });
    this.#calls = createCallCounter(cfg.maxCalls);
    this.#budget = { url: cfg.budget, account: cfg.account, keyId: keyIdOf(cfg.apiKey) };
    if (cfg.budget !== undefined) {
      // The budget database's password must not reach a log line (pg errors may quote the URL).
      const password = passwordOf(cfg.budget);
      if (password) logger.redactor.add(password);
    }
    this.#logRelay = openLogRelay(logger);
    const init: WorkerInit = {
      mode: cfg.mode,
      addressEndpoint: cfg.addressEndpoint,
      baseUrl: cfg.baseUrl,
      realtimeUrl: cfg.realtimeUrl,
      apiKey: cfg.apiKey,
      include: cfg.include,
      company: cfg.company,
      timeoutMs: cfg.timeoutMs,
      retry: cfg.retry,
      policy: cfg.policy,
      concurrency: cfg.threads === 0 ? cfg.concurrency : Math.ceil(cfg.concurrency / cfg.threads),
      throttle: throttle.buffer,
      budget: this.#budget,
      budgetOptions: { limits: cfg.rateLimits, maxHoldMs: cfg.retry?.maxRetryAfterMs },
      calls: this.#calls,
      ...(store ? { storeBacklog: this.#storeBacklog.buffer as SharedArrayBuffer, storeBacklogLimit: cfg.concurrency } : {}),
      logLevel: logger.level,
      logChannel: this.#logRelay.name,
    };
    this.#pool = createCallPool(init, cfg.threads, logger);
  }

  async process(records: readonly EngineRecord[], opts: ProcessOptions = {}): Promise<RecordResult[]> {
    if (this.#closing) throw new DqError('the engine is closed; create a new one', { code: 'engine-closed', retriable: false });
    if (this.#stopped) throw this.#stopped;
    opts.signal?.throwIfAborted();
    opts.drain?.throwIfAborted();
    this.#report.begin();
    // [0]: RUN, STOP or ABORT; [1]: DRAINING once the batch drains (messages.ts CallTask.control).
    const control = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    const onAbort = (): void => {
      Atomics.compareExchange(control, 0, Control.RUN, Control.ABORT);
      Atomics.notify(control, 0);
    };
    const onDrain = (): void => void Atomics.store(control, 1, DRAINING);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    opts.drain?.addEventListener('abort', onDrain, { once: true });
    this.#running.add(control);
    try {
      const results = await this.#run(records, control, opts.signal, opts.drain);
      // The batch's answers are committed to the store before the batch returns: a connector
      // checkpoints (or commits its offsets) only after this, so nothing it counts as done can be
      // ahead of the store, while the store's commits overlap the calls instead of holding them up.
      await this.#storeCommitted();
      for (const r of results) this.#report.addResult(r);
      return results;
    } finally {
      this.#running.delete(control);
      // Releases the workers' waits on this word (see worker.ts controlSignal).
      Atomics.notify(control, 0);
      opts.signal?.removeEventListener('abort', onAbort);
      opts.drain?.removeEventListener('abort', onDrain);
      this.#report.end();
    }
  }

  async #run(records: readonly EngineRecord[], control: Int32Array, signal?: AbortSignal, drain?: AbortSignal): Promise<RecordResult[]> {
    const results = new Array<RecordResult | undefined>(records.length);
    const groups = new Map<string, Group>();
    records.forEach((record, i) => {
      const fields = mapRecord(this.#cfg.mode, record, this.#cfg.defaultCountry);
      const violations = localViolations(this.#cfg.mode, fields);
      if (violations.length > 0) {
        results[i] = localRefusal(violations);
        return;
      }
      const key = requestKey(this.#scope, fields);
      const group = groups.get(key);
      if (group) group.indices.push(i);
      else groups.set(key, { key, fields, indices: [i] });
    });

    let pending = [...groups.values()];
    while (pending.length > 0) {
      const settled = await this.#resolve(pending, control);
      pending = [];
      // Draining: a call not started stays so, and the batch is incomplete (see ProcessOptions.drain).
      let undrained = false;
      for (const { group, source, outcome } of settled) {
        if (outcome.kind === 'result') {
          group.indices.forEach((index, n) => {
            const shared: Source = source === 'cache' || source === 'store' ? source : n === 0 ? source : 'dedup';
            results[index] = withSource(outcome.result, shared);
          });
        } else if (outcome.kind === 'skipped' && !this.#stopped && Atomics.load(control, 0) === Control.RUN) {
          if (Atomics.load(control, 1) === DRAINING) undrained = true;
          // Another batch owned this call and was aborted or drained: this batch still wants the answer.
          else pending.push(group);
        }
      }
      if (this.#stopped) throw this.#stopped;
      const outage = this.#interrupted.get(control);
      if (outage) throw outage;
      if (Atomics.load(control, 0) === Control.ABORT) throw signal?.reason ?? new DqError('aborted', { code: 'aborted', retriable: false });
      if (undrained) throw drain?.reason ?? new DqError('drained', { code: 'aborted', retriable: false });
    }
    return results as RecordResult[];
  }

  /**
   * Answers each group from a call in flight, the cache, the store (one lookup for the batch's
   * misses), or a new call; resolves when all have settled. Works without a promise per group: a batch may hold hundreds of thousands.
   */
  async #resolve(groups: readonly Group[], control: Int32Array): Promise<Settled[]> {
    const settled: Settled[] = [];
    const joins: Promise<void>[] = [];
    const own: Array<{ group: Group; call: PendingCall }> = [];
    const join = (group: Group, call: PendingCall): void => {
      joins.push(call.wait().then((outcome) => void settled.push({ group, source: 'dedup', outcome })));
    };
    const misses: Group[] = [];
    const place = (group: Group, cached: CachedResult | undefined, source: Source = 'cache'): void => {
      if (cached) {
        settled.push({ group, source, outcome: { kind: 'result', result: cached } });
        return;
      }
      if (this.#store && source === 'cache') {
        misses.push(group);
        return;
      }
      // An async lookup may have let another batch start the call meanwhile.
      const raced = this.#inflight.get(group.key);
      if (raced) return join(group, raced);
      const call = new PendingCall(group.key, group.fields);
      this.#inflight.set(group.key, call);
      own.push({ group, call });
    };
    const lookups: Promise<void>[] = [];
    for (const group of groups) {
      const joined = this.#inflight.get(group.key);
      if (joined) {
        join(group, joined);
        continue;
      }
      const cached = this.#cache.get(group.key);
      if (cached instanceof Promise) lookups.push(cached.then((value) => place(group, value)));
      else place(group, cached);
    }
    if (lookups.length > 0 || misses.length > 0) {
      try {
        await Promise.all(lookups);
        if (this.#store && misses.length > 0) {
          const found = await this.#storedAnswers(this.#store, misses);
          this.#report.addStoreLookups(misses.length, found.size);
          for (const group of misses) {
            const stored = found.get(group.key);
            // Kept in the run's cache too: a repeat later in this run does not ask the store again.
            if (stored) void Promise.resolve(this.#cache.set(group.key, stored)).catch(() => undefined);
            place(group, stored, stored ? 'store' : 'api');
          }
        }
      } catch (e) {
        // Nothing was sent: release the calls registered so far, or batches joining them would wait forever.
        for (const { call } of own) this.#settle(call, { kind: 'skipped' });
        if (this.#store && misses.length > 0) this.#storeFailed(e);
        throw e;
      }
    }

    if (own.length > 0) void this.#checkKey();
    const failures: unknown[] = [];
    const size = this.#pool.chunkSize(own.length);
    const tasks: Promise<void>[] = [];
    for (let start = 0; start < own.length; start += size) {
      const chunk = own.slice(start, start + size).map((o) => o.call);
      tasks.push(this.#dispatch(chunk, control).catch((e: unknown) => void failures.push(e)));
    }
    await Promise.all(tasks);
    await Promise.all(joins);
    for (const { group, call } of own) settled.push({ group, source: 'api', outcome: call.outcome ?? { kind: 'skipped' } });
    if (failures.length > 0) throw failures[0];
    return settled;
  }

  /**
   * The store's answers to `groups`, by group key. The store keeps what the platform answered with
   * the status the policy of the run that bought it gave; a class has the status this run's policy
   * gives it (docs/architecture.md "The result store": a run with `--accept A,B` never takes a
   * class C correction as accepted because another run accepted it).
   */
  async #storedAnswers(store: ResultStore, groups: ReadonlyArray<Pick<Group, 'key'>>): Promise<Map<string, CachedResult>> {
    const found = await store.getMany(groups.map((g) => g.key));
    const policy = this.#cfg.policy;
    for (const [key, result] of found) {
      if (result.resultClass === undefined || result.error !== undefined) continue;
      const status = policy[result.resultClass];
      if (status !== result.status) found.set(key, { ...result, status });
    }
    return found;
  }

  /**
   * Issues the store write of a definitive answer (the store commits the writes of one burst
   * together); its failure is kept for {@link #storeCommitted}.
   */
  #storeWrite(store: ResultStore, key: string, result: CachedResult): void {
    const written = Promise.resolve(store.set(key, result));
    Atomics.add(this.#storeBacklog, 0, 1);
    // Writes committed together share one promise: it is watched once, with its count of answers.
    const answers = this.#storeWrites.get(written);
    this.#storeWrites.set(written, (answers ?? 0) + 1);
    if (answers !== undefined) return;
    const settled = (): void => {
      const committed = this.#storeWrites.get(written) ?? 0;
      Atomics.sub(this.#storeBacklog, 0, committed);
      // As many waiting calls as answers left the backlog: the rest keep waiting, unwoken.
      Atomics.notify(this.#storeBacklog, 0, committed);
      this.#storeWrites.delete(written);
    };
    written.then(settled, (e: unknown) => {
      this.#storeFailed(e); // first: the calls held back by the backlog must see the stop
      settled();
    });
  }

  /**
   * A store write or lookup failed: the run stops like on a run stop (no batch starts another
   * call: an answer bought now could not be kept, and would be bought again by the rerun), and
   * every batch fails with the store's error, so nothing after the failure is counted as done.
   */
  #storeFailed(e: unknown): void {
    this.#storeFailure ??= e;
    this.#halt(e instanceof Error ? e : new Error(String(e)));
  }

  /** Resolves once every store write issued so far is committed; throws the store's error if one failed. */
  async #storeCommitted(): Promise<void> {
    if (this.#storeWrites.size > 0) await Promise.allSettled([...this.#storeWrites.keys()]);
    if (this.#storeFailure !== undefined) throw this.#storeFailure;
  }

  /**
   * Sends one chunk to a worker and settles its calls. Definitive results are in the cache, and their
   * store writes issued, before any batch sees them (a batch returns after their commit); a call that could not reach the
   * platform is settled only once the {@link OutageWatch} has decided whether the record failed on
   * its own (`unavailable`) or the platform is down (the running batches fail, nothing is final).
   */
  async #dispatch(chunk: PendingCall[], control: Int32Array): Promise<void> {
    let outcomes: CallOutcome[];
    let answered: TaskResult;
    this.#chunksOut += 1;
    // Each definitive answer goes to the store the moment it arrives (on the engine's thread; a
    // worker thread's arrive with its chunk), so a kill loses at most the calls in flight and the
    // writes of the last burst; the batch waits for the commit before it returns (see process).
    const stored = new Set<number>();
    const store = this.#store;
    const onOutcome = store
      ? (i: number, outcome: CallOutcome): void => {
          if (outcome.kind !== 'result' || outcome.unreachableAt !== undefined || !storable(outcome.result)) return;
          outcome.result.checkedAt ??= isoNow();
          this.#storeWrite(store, (chunk[i] as PendingCall).key, outcome.result);
          stored.add(i);
        }
      : undefined;
    try {
      const answer = await this.#pool.run({ control, requests: chunk.map((c) => c.fields) }, onOutcome);
      const checkedAt = new Date().toISOString();
      for (const outcome of answer.outcomes) if (outcome.kind === 'result') outcome.result.checkedAt ??= checkedAt;
      this.#report.addCalls(answer.calls, answer.retries, answer.callSeconds);
      outcomes = answer.outcomes;
      // Told after the chunk's failures (below): the order of the ends decides, not this order.
      answered = answer;
    } catch (e) {
      this.#chunksOut -= 1;
      this.#decideOutage();
      for (const call of chunk) this.#settle(call, { kind: 'skipped' });
      throw e;
    }
    this.#chunksOut -= 1;
    const writes: Promise<void>[] = [];
    const held: Array<{ call: PendingCall; outcome: Extract<CallOutcome, { kind: 'result' }>; verdict: Promise<Verdict> }> = [];
    try {
      for (let i = 0; i < chunk.length; i++) {
        const call = chunk[i] as PendingCall;
        const outcome: CallOutcome = outcomes[i] ?? { kind: 'skipped' };
        if (outcome.kind === 'result') {
          const { result } = outcome;
          if (outcome.unreachableAt !== undefined) {
            const failure = `${result.error?.code ?? 'unavailable'}: ${result.error?.message ?? ''}`;
            held.push({ call, outcome, verdict: this.#outage.failed(outcome.unreachableAt, failure) });
          } else if (result.status !== 'unavailable') {
            const written = this.#cache.set(call.key, result);
            if (written instanceof Promise) writes.push(written);
            // Issued before any batch sees it; every batch that uses it returns after its commit.
            if (store && !stored.has(i) && storable(result)) this.#storeWrite(store, call.key, result);
          }
        } else if (outcome.kind === 'stop') {
          const error = errorFromData(outcome.error);
          // The account's rate used up by something else: like an outage, it stops the batches
          // running now, and a later batch may try again (dq-kafka repeats its batch after a pause).
          if ((error as { code?: unknown }).code === LOCAL_CODES.rateLimited) this.#interruptRunning(error, 'rate limit: the running batches stop');
          else this.#halt(error);
        }
      }
      this.#outage.answered(answered.answered, answered.lastAnswerAt, answered.answeredAfterFailure);
      this.#decideOutage();
      if (writes.length > 0) await Promise.all(writes);
      for (let i = 0; i < chunk.length; i++) {
        const outcome = outcomes[i];
        if (outcome?.kind === 'result' && outcome.unreachableAt === undefined) this.#finish(chunk[i] as PendingCall, outcome);
      }
      for (const { call, outcome, verdict } of held) {
        if ((await verdict) === 'isolated') this.#finish(call, outcome);
      }
    } finally {
      // A cache that throws must not leave calls unsettled (settling twice is a no-op); a call the
      // outage left without an answer is skipped, to be asked again by a later run.
      for (const call of chunk) this.#settle(call, { kind: 'skipped' });
      this.#decideOutage(); // a throw above must not leave other chunks' calls held
    }
  }

  /** Settles a call with its final result; an `unavailable` one is reported and logged once. */
  #finish(call: PendingCall, outcome: Extract<CallOutcome, { kind: 'result' }>): void {
    const { result } = outcome;
    if (result.status === 'unavailable') {
      const failure = { code: result.error?.code ?? 'unavailable', message: result.error?.message ?? 'unavailable' };
      this.#report.addFailure(result.requestId === undefined ? failure : { ...failure, requestId: result.requestId });
      this.#logger.warn('record unavailable', { ...failure, requestId: result.requestId });
    }
    this.#settle(call, outcome);
  }

  /**
   * Lets the outage watch decide the calls it holds (all of them when no chunk is out that could
   * still tell); on an outage, every running batch fails with its error and starts no further call.
   */
  #decideOutage(): void {
    const error = this.#outage.decide(this.#chunksOut === 0);
    if (error) this.#interruptRunning(error, 'platform unreachable: the running batches stop');
  }

  /** Every batch running now fails with `error` and starts no further call; later batches may try again. */
  #interruptRunning(error: Error, message: string): void {
    for (const control of this.#running) {
      if (!this.#interrupted.has(control)) this.#interrupted.set(control, error);
      Atomics.compareExchange(control, 0, Control.RUN, Control.STOP);
      Atomics.notify(control, 0);
    }
    this.#logger.error(message, { error });
  }

  #settle(call: PendingCall, outcome: CallOutcome): void {
    if (this.#inflight.get(call.key) === call) this.#inflight.delete(call.key);
    call.settle(outcome);
  }

  /** A run-scope error came back: no batch starts another call, and later batches are refused. */
  #halt(error: Error): void {
    if (this.#stopped) return;
    this.#stopped = error;
    // The spending cap lets the calls in flight finish (they are paid for: their answers go to the
    // cache); every further call fails at the cap without being sent.
    if ((error as { code?: unknown }).code === MAX_CALLS_REACHED) {
      this.#logger.warn('spending cap reached: no further call is sent', { code: MAX_CALLS_REACHED, maxCalls: this.#cfg.maxCalls });
      return;
    }
    for (const control of this.#running) {
      Atomics.compareExchange(control, 0, Control.RUN, Control.STOP);
      Atomics.notify(control, 0);
    }
    this.#logger.error('run stopped', { error });
  }

  async plan(records: readonly EngineRecord[], options: PlanOptions = {}): Promise<RunPlan> {
    const keys = new Map<string, RequestFields>();
    let invalidInput = 0;
    for (const record of records) {
      const fields = mapRecord(this.#cfg.mode, record, this.#cfg.defaultCountry);
      if (localViolations(this.#cfg.mode, fields).length > 0) {
        invalidInput += 1;
        continue;
      }
      const key = requestKey(this.#scope, fields);
      if (options.seen?.has(key)) continue;
      options.seen?.add(key);
      keys.set(key, fields);
    }
    const unknown: Array<Pick<Group, 'key' | 'fields'>> = [];
    for (const [key, fields] of keys) {
      if (this.#inflight.has(key)) continue;
      if ((await this.#cache.get(key)) === undefined) unknown.push({ key, fields });
    }
    const fromStore = this.#store && unknown.length > 0 ? (await this.#storedAnswers(this.#store, unknown)).size : 0;
    return { records: records.length, distinct: keys.size, calls: unknown.length - fromStore, fromStore, invalidInput };
  }

  ready(): Promise<void> {
    const cfg = this.#cfg;
    const endpoint = cfg.mode === 'address' ? cfg.addressEndpoint : 'company';
    this.#ready ??= probeBudget(this.#budget, endpoint, { limits: cfg.rateLimits, maxHoldMs: cfg.retry?.maxRetryAfterMs }).then(() => this.#checkKey());
    return this.#ready;
  }

  /** Warns once, when the run's first calls start (or at `ready`), if the API key is in use under another account of the shared budget. */
  #checkKey(): Promise<void> {
    const cfg = this.#cfg;
    const endpoint = cfg.mode === 'address' ? cfg.addressEndpoint : 'company';
    this.#keyCheck ??= checkSharedKey(this.#budget, endpoint, { limits: cfg.rateLimits }, (message, fields) => this.#logger.warn(message, fields));
    return this.#keyCheck;
  }

  report(): RunReport {
    return {
      ...this.#report.snapshot(),
      budget: {
        scope: this.#cfg.budget === undefined ? 'local' : 'shared',
        account: this.#cfg.account,
        billableCalls: callsSent(this.#calls),
        maxCalls: this.#cfg.maxCalls > 0 ? this.#cfg.maxCalls : null,
      },
    };
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Never rejects; bounded like the budget's own queries.
      await this.#keyCheck;
      try {
        await this.#pool.close();
      } finally {
        this.#logRelay.close();
        try {
          await this.#cache.close?.();
        } finally {
          await this.#store?.close();
        }
      }
    })();
    return this.#closing;
  }
}

/**
 * Whether an answer goes to the result store: a definitive one. Not `unavailable` (nothing was
 * answered), nor `unsupported-country`: the platform's 500 country-not-available depends on the
 * countries of the account's plan (a store is shared by accounts, and a plan may add the country
 * tomorrow), and it is not billed, so keeping it saves nothing.
 */
function storable(result: CachedResult): boolean {
  return result.status !== 'unavailable' && result.status !== 'unsupported-country';
}

/** The optional fields of a result, in the order {@link withSource} copies them. */
const RESULT_FIELDS = ['resultClass', 'address', 'candidates', 'company', 'companies', 'hits', 'vatCode', 'requestId', 'checkedAt', 'error'] as const;
// A field added to CachedResult but not to RESULT_FIELDS fails the build here (it would be dropped).
const allFieldsCopied: [Exclude<keyof CachedResult, 'status' | (typeof RESULT_FIELDS)[number]>] extends [never] ? true : never = true;
void allFieldsCopied;

/**
 * A cached result with its source, its fields copied in one fixed order. Not `{ ...result, source }`:
 * V8 gives each such copy of an object with more than a few fields a hidden class of its own, and
 * every later read of a result (run report, connectors) then goes through a megamorphic lookup.
 */
function withSource(result: CachedResult, source: Source): RecordResult {
  const out: Record<string, unknown> = { status: result.status, source };
  for (const field of RESULT_FIELDS) {
    const value = result[field];
    if (value !== undefined) out[field] = value;
  }
  return out as unknown as RecordResult;
}

/** The password of a connection URL, if it has one. */
function passwordOf(url: string): string | undefined {
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}

let isoMillis = -1;
let isoText = '';
/** The time now as an ISO string, formatted once per millisecond (a chunk's answers arrive in the same one). */
function isoNow(): string {
  const now = Date.now();
  if (now !== isoMillis) {
    isoMillis = now;
    isoText = new Date(now).toISOString();
  }
  return isoText;
}
