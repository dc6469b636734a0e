import { Piscina } from 'piscina';
import type { CallTask, TaskResult, WorkerInit } from './messages.js';

/** Largest number of requests sent to a worker in one message: amortises messaging, bounds latency. */
export const MAX_CHUNK = 64;

/** Tasks a worker holds at once, so it has the next chunk at hand while a result travels back. */
const TASKS_PER_WORKER = 4;

/** The piscina pool of call workers of one engine. */
export class WorkerPool {
  readonly #pool: Piscina<CallTask, TaskResult>;
  readonly #threads: number;

  constructor(init: WorkerInit, threads: number) {
    this.#threads = threads;
    this.#pool = new Piscina<CallTask, TaskResult>({
      // Built JS next to this file; tests and connectors load core from dist, so this resolves.
      filename: new URL('./worker.js', import.meta.url).href,
      minThreads: threads,
      maxThreads: threads,
      concurrentTasksPerWorker: TASKS_PER_WORKER,
      // Tasks are async and keep sockets open between them: the worker must not block in Atomics.wait.
      atomics: 'disabled',
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: init,
    });
  }

  /**
   * Size of the chunks `n` requests are cut into: at most {@link MAX_CHUNK}, and small enough that
   * every worker gets two chunks, so a small batch still uses the whole pool.
   */
  chunkSize(n: number): number {
    return Math.max(1, Math.min(MAX_CHUNK, Math.ceil(n / (this.#threads * 2))));
  }

  run(task: CallTask): Promise<TaskResult> {
    return this.#pool.run(task);
  }

  /** Waits for running tasks and stops the threads. */
  async close(): Promise<void> {
    await this.#pool.close();
  }
}
