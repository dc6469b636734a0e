/**
 * What runs a chunk of distinct requests: calls the platform concurrently, up to a share of the
 * engine's concurrency, through the engine's shared throttle. Used inside each piscina worker
 * (worker.ts) and, with `threads: 0`, directly on the engine's own thread (inline-pool.ts).
 * Everything it returns is plain data (errors as `ErrorData`), so it can cross `postMessage`.
 */
import { RetriesExhaustedError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { attachSharedThrottle, createBudgetThrottle, MAX_CALLS_REACHED } from '../throttle/index.js';
import { attemptsMade, failedUnsent } from '../throttle/metered.js';
import { createTransport } from '../transport/index.js';
import type { Transport } from '../transport/index.js';
import { Control, DRAINING } from './messages.js';
import type { CallOutcome, CallTask, TaskResult, WorkerInit } from './messages.js';
import { errorOutcome, preciseNow } from './outcome.js';
import { createCaller } from './worker-calls.js';

/** Runs tasks; `close` releases the HTTP connections. */
export interface TaskRunner {
  /** `onOutcome` (same thread only) hears each call's outcome as it ends, before the chunk's. */
  run(task: CallTask, onOutcome?: OutcomeListener): Promise<TaskResult>;
  close(): Promise<void>;
}

// Atomics.waitAsync is in Node 20 (V8) but not in the ES2023 lib the project compiles against.
const waitAsync = (
  Atomics as unknown as {
    waitAsync(array: Int32Array, index: number, value: number, timeoutMs?: number): { async: false; value: string } | { async: true; value: Promise<string> };
  }
).waitAsync;

/**
 * An AbortSignal that fires when the batch's control word leaves RUN (stop or abort), so calls
 * waiting for the throttle or in flight are dropped instead of started. The engine notifies the
 * word when it changes it and when the batch ends, so the wait never outlives the batch.
 */
function controlSignal(control: Int32Array): AbortSignal {
  const controller = new AbortController();
  const wait = waitAsync(control, 0, Control.RUN);
  if (!wait.async) controller.abort();
  else void wait.value.then(() => Atomics.load(control, 0) !== Control.RUN && controller.abort());
  return controller.signal;
}

/**
 * Waits until fewer than `limit` answers await their store commit (`backlog[0]`, kept by the
 * engine): true then, false when the batch was stopped meanwhile (a store that failed stops the
 * run). Reached only while the store lags behind the platform.
 */
async function storeCaughtUp(backlog: Int32Array, limit: number, control: Int32Array): Promise<boolean> {
  for (let n = Atomics.load(backlog, 0); n >= limit; n = Atomics.load(backlog, 0)) {
    if (!starting(control)) return false;
    // Bounded, so that a stop is seen even when the count does not move.
    const wait = waitAsync(backlog, 0, n, 50);
    if (wait.async) await wait.value;
  }
  return starting(control);
}

/** Whether calls of the batch may still be started: it is neither stopped, aborted nor draining. */
const starting = (control: Int32Array): boolean => Atomics.load(control, 0) === Control.RUN && Atomics.load(control, 1) !== DRAINING;

/** Hears the outcome of request `index` of a task as soon as it ends. */
export type OutcomeListener = (index: number, outcome: CallOutcome) => void;

/** A runner with its own transport (keep-alive pool of `init.concurrency` connections). */
export function createTaskRunner(init: WorkerInit, logger: Logger): TaskRunner {
  const throttle = createBudgetThrottle(attachSharedThrottle(init.throttle), init.budget, init.calls, init.budgetOptions);
  const transport: Transport = createTransport({
    baseUrl: init.baseUrl,
    realtimeUrl: init.realtimeUrl,
    apiKey: init.apiKey,
    timeoutMs: init.timeoutMs,
    connections: init.concurrency,
    throttle,
    retry: init.retry,
    logger,
  });
  const call = createCaller(init, transport);
  const backlog = init.storeBacklog ? new Int32Array(init.storeBacklog) : undefined;
  const backlogLimit = init.storeBacklogLimit ?? Infinity;

  /** Calls in flight, across all tasks this runner holds. */
  let inFlight = 0;
  /** Calls waiting for a slot, oldest first from `head` (no `shift()`: a queue may hold a whole batch). */
  let waiting: Array<() => void> = [];
  let head = 0;
  /** Extra attempts not yet reported to the engine. */
  let unreportedRetries = 0;

  /** Takes a call slot: undefined when one was free, else a promise resolved when one is handed over. */
  const acquireSlot = (): Promise<void> | undefined => {
    if (inFlight < init.concurrency) {
      inFlight += 1;
      return undefined;
    }
    return new Promise<void>((resolve) => waiting.push(resolve));
  };

  const releaseSlot = (): void => {
    const next = waiting[head];
    if (next === undefined) {
      inFlight -= 1;
      return;
    }
    waiting[head++] = undefined as unknown as () => void;
    if (head === waiting.length) {
      waiting = [];
      head = 0;
    } else if (head >= 1024 && head * 2 >= waiting.length) {
      waiting = waiting.slice(head);
      head = 0;
    }
    next(); // the slot passes on: inFlight stays the same
  };

  /**
   * Calls of one task sent to the platform, those it answered, when the last of them ended, and,
   * once one could not reach the platform, when each answered one ended after it.
   */
  type Answers = { sent: number; count: number; lastAt: number; seconds: Map<number, number>; unreachable: boolean; after?: number[] };
  /**
   * Counts a call that ended at `now` (epoch ms): in the second its attempt ended, for the run
   * report's calls-per-second histogram (`sentCall`), and as answered by the platform (`answeredCall`).
   */
  const ended = (answers: Answers, now: number, sentCall: boolean, answeredCall: boolean): void => {
    if (answeredCall) {
      answers.count += 1;
      answers.lastAt = now;
      if (answers.unreachable) (answers.after ??= []).push(now);
    }
    if (sentCall) {
      answers.sent += 1;
      const second = Math.floor(now / 1000);
      answers.seconds.set(second, (answers.seconds.get(second) ?? 0) + 1);
    }
  };

  /**
   * One call of a task, from its slot to its outcome, told to `onOutcome` as it ends. One async
   * frame per call: the per-call path is the engine's hot path.
   */
  const callOne = async (task: CallTask, index: number, signal: AbortSignal, answers: Answers, onOutcome?: OutcomeListener): Promise<CallOutcome> => {
    const fields = task.requests[index];
    const slot = acquireSlot();
    if (slot !== undefined) await slot;
    let outcome: CallOutcome;
    try {
      const held = backlog !== undefined && Atomics.load(backlog, 0) >= backlogLimit && !(await storeCaughtUp(backlog, backlogLimit, task.control));
      if (fields === undefined || signal.aborted || held || !starting(task.control)) outcome = { kind: 'skipped' };
      else {
        try {
          const res = await call(fields, String(index), signal);
          unreportedRetries += res.attempts - 1;
          ended(answers, preciseNow(), true, true);
          outcome = res.outcome;
        } catch (e) {
          outcome = failedCall(e, task, signal, answers);
        }
      }
    } finally {
      releaseSlot();
    }
    onOutcome?.(index, outcome);
    return outcome;
  };

  /** The outcome of a call that threw. */
  const failedCall = (e: unknown, task: CallTask, signal: AbortSignal, answers: Answers): CallOutcome => {
    const attempts = attemptsMade(e) ?? (e instanceof RetriesExhaustedError ? e.attempts : 1);
    unreportedRetries += Math.max(0, attempts - 1);
    // A call the budget refused before any of its attempts went out is not a call made (`apiCalls`).
    const sent = !failedUnsent(e);
    if (signal.aborted) {
      // Cut in flight: it went out, and the platform bills a request it received whole (README "apiCalls").
      if (sent) ended(answers, preciseNow(), true, false);
      return { kind: 'skipped' };
    }
    const outcome = errorOutcome(e);
    const unreachableAt = outcome.kind === 'result' ? outcome.unreachableAt : undefined;
    ended(answers, unreachableAt ?? preciseNow(), sent, outcome.kind === 'result' && unreachableAt === undefined);
    if (unreachableAt !== undefined) answers.unreachable = true;
    // Tell sibling calls and threads at once; the engine also stops every other batch. Not when
    // the spending cap was reached: the calls in flight were paid for and must bring their
    // answers home, and no further call can be sent anyway (each fails at the cap, unsent).
    if (
      outcome.kind === 'stop' &&
      outcome.error.code !== MAX_CALLS_REACHED &&
      Atomics.compareExchange(task.control, 0, Control.RUN, Control.STOP) === Control.RUN
    ) {
      Atomics.notify(task.control, 0);
    }
    return outcome;
  };

  return {
    /** Outcomes in request order. */
    async run(task, onOutcome) {
      const signal = controlSignal(task.control);
      const answers: Answers = { sent: 0, count: 0, lastAt: 0, seconds: new Map(), unreachable: false };
      const outcomes = await Promise.all(task.requests.map((_, i) => callOne(task, i, signal, answers, onOutcome)));
      const retries = unreportedRetries;
      unreportedRetries = 0;
      const { sent: calls, count: answered, lastAt: lastAnswerAt, after } = answers;
      return { outcomes, calls, retries, answered, lastAnswerAt, callSeconds: [...answers.seconds], ...(after ? { answeredAfterFailure: after } : {}) };
    },
    close: async () => {
      await transport.close();
      await throttle.close();
    },
  };
}
