import type { Piscina } from 'piscina';
import type { Logger } from '../log/index.js';
import type { CallTask, TaskResult, WorkerInit } from './messages.js';
import { createTaskRunner, type OutcomeListener, type TaskRunner } from './task-runner.js';

/** Largest number of requests sent to a worker in one message: amortises messaging, bounds latency. */
export const MAX_CHUNK = 64;

/** Tasks a worker holds at once, so it has the next chunk at hand while a result travels back. */
const TASKS_PER_WORKER = 4;

/** Where the engine's chunks of calls run: piscina worker threads, or the engine's own thread. */
export interface CallPool {
  /** Size of the chunks `n` requests are cut into. */
  chunkSize(n: number): number;
  /**
   * `onOutcome` hears each call's outcome as it ends, on the engine's thread only (`threads: 0`);
   * a worker thread hands its chunk's outcomes back together.
   */
  run(task: CallTask, onOutcome?: OutcomeListener): Promise<TaskResult>;
  /** Waits for running tasks and releases threads and connections. */
  close(): Promise<void>;
}

/**
 * The pool of an engine with `threads` workers; `threads: 0` runs the calls on the engine's own
 * thread, with no messaging: on a machine of one or two cores the thread hand-off (structured
 * clone both ways) costs more CPU than a second thread gives back.
 */
export function createCallPool(init: WorkerInit, threads: number, logger: Logger): CallPool {
  return threads === 0 ? new InlinePool(createTaskRunner(init, logger)) : new WorkerPool(init, threads);
}

/** Calls on the engine's thread: chunks go straight to one runner holding all of the concurrency. */
class InlinePool implements CallPool {
  readonly #runner: TaskRunner;
  readonly #running = new Set<Promise<unknown>>();

  constructor(runner: TaskRunner) {
    this.#runner = runner;
  }

  chunkSize(n: number): number {
    return Math.max(1, Math.min(MAX_CHUNK, n));
  }

  run(task: CallTask, onOutcome?: OutcomeListener): Promise<TaskResult> {
    const p = this.#runner.run(task, onOutcome);
    this.#running.add(p);
    const forget = (): void => void this.#running.delete(p);
    p.then(forget, forget);
    return p;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#running]);
    await this.#runner.close();
  }
}

/**
 * The piscina pool of call workers of one engine. The threads start with the first call, not with
 * the engine: an engine closed before it called anything (a pre-flight refusal, a usage error)
 * starts and tears down no thread. (The test suite once saw a process abort in Node 20's
 * synchronous ESM loader in a worker thread of such a short-lived engine.)
 */
class WorkerPool implements CallPool {
  readonly #init: WorkerInit;
  readonly #threads: number;
  /** Loaded with the pool: a run on the engine's thread (the default on 1-2 cores) never loads piscina. */
  #pool: Promise<Piscina<CallTask, TaskResult>> | undefined;

  constructor(init: WorkerInit, threads: number) {
    this.#init = init;
    this.#threads = threads;
  }

  #started(): Promise<Piscina<CallTask, TaskResult>> {
    this.#pool ??= import('piscina').then(
      ({ Piscina }) =>
        new Piscina<CallTask, TaskResult>({
          // Built JS next to this file; tests and connectors load core from dist, so this resolves.
          filename: new URL('./worker.js', import.meta.url).href,
          minThreads: this.#threads,
          maxThreads: this.#threads,
          concurrentTasksPerWorker: TASKS_PER_WORKER,
          // Tasks are async and keep sockets open between them: the worker must not block in Atomics.wait.
          atomics: 'disabled',
          idleTimeout: Number.POSITIVE_INFINITY,
          workerData: this.#init,
        }),
    );
    return this.#pool;
  }

  /**
   * At most {@link MAX_CHUNK}, and small enough that every worker gets two chunks, so a small
   * batch still uses the whole pool.
   */
  chunkSize(n: number): number {
    return Math.max(1, Math.min(MAX_CHUNK, Math.ceil(n / (this.#threads * 2))));
  }

  /** Tasks sent and not yet ended: {@link close} waits for them itself. */
  readonly #running = new Set<Promise<unknown>>();

  run(task: CallTask): Promise<TaskResult> {
    const p = this.#started().then((pool) => pool.run(task));
    this.#running.add(p);
    const forget = (): void => void this.#running.delete(p);
    p.then(forget, forget);
    return p;
  }

  /**
   * Waits for every task sent, then closes the threads. piscina's own wait (5.3) counts a worker
   * that ran dry once per listener it registered, so it can end while another worker still runs a
   * task, and destroys that worker: the answers of its calls, paid for, would never reach the
   * engine (nor the result store), and the next run would buy them again.
   */
  async close(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
    if (this.#pool) await (await this.#pool).close();
  }
}
