/**
 * Running SHA-512 digests fed with blocks of shared memory, computed either on the calling thread
 * or on one worker thread. SHA-512 costs about as much CPU per byte as receiving and writing the
 * bytes together, so taking it off the event loop lets a large download receive, write and hash
 * at once instead of one after the other.
 */
import { createHash, type Hash } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/** A running SHA-512 over the blocks given to it, in the order given. */
export interface BlockHasher {
  /**
   * Adds `block` to the digest. The returned promise settles once the hasher no longer reads
   * `block` (at once for the inline hasher); it rejects when the worker thread failed.
   */
  update(block: Uint8Array): Promise<void>;
  /** Lower-case hex digest of everything added; the hasher is finished afterwards. */
  digest(): Promise<string>;
  /** Forgets the running digest without computing it. */
  dispose(): void;
}

/** A hasher on the calling thread (small files, where a message round trip costs more than it saves). */
export function inlineHasher(): BlockHasher {
  let hash: Hash | undefined = createHash('sha512');
  const live = (): Hash => {
    if (hash === undefined) throw new Error('SHA-512 hasher used after digest() or dispose()');
    return hash;
  };
  return {
    async update(block) {
      live().update(block);
    },
    async digest() {
      const hex = live().digest('hex');
      hash = undefined;
      return hex;
    },
    dispose() {
      hash = undefined;
    },
  };
}

/** Messages to the worker; `buffer` is shared memory, so posting it copies nothing. */
type Request = { job: number; op: 'update'; buffer: SharedArrayBuffer; offset: number; length: number } | { job: number; op: 'digest' | 'drop' };
/**
 * Answers: `count` updates of the job done (`hex` absent), or its digest. Answers of one job
 * arrive in request order.
 */
interface Answer {
  job: number;
  count: number;
  hex?: string;
}

// CommonJS, evaluated: the worker needs no file of its own, so it runs the same from src/ under
// vitest as from dist/. One Hash per job; messages of a job are handled in the order posted. The
// messages already queued are taken in one go and their updates answered together, four at most
// per answer: a thread that falls behind sends a quarter of the answers (each wakes the main
// thread) and still hands blocks back as it goes.
const WORKER_SOURCE = `
const { parentPort, receiveMessageOnPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const ANSWER_EVERY = 4; // blocks: a long backlog still releases its blocks as it goes
const jobs = new Map();
const done = new Map();
const answer = () => {
  for (const [job, count] of done) parentPort.postMessage({ job, count });
  done.clear();
};
const handle = (m) => {
  if (m.op === 'update') {
    let h = jobs.get(m.job);
    if (h === undefined) jobs.set(m.job, (h = createHash('sha512')));
    h.update(new Uint8Array(m.buffer, m.offset, m.length));
    done.set(m.job, (done.get(m.job) ?? 0) + 1);
  } else if (m.op === 'digest') {
    answer();
    const h = jobs.get(m.job) ?? createHash('sha512');
    jobs.delete(m.job);
    parentPort.postMessage({ job: m.job, count: 1, hex: h.digest('hex') });
  } else {
    jobs.delete(m.job);
  }
};
let unanswered = 0;
const handleAndCount = (m) => {
  handle(m);
  if (m.op === 'update' && ++unanswered >= ANSWER_EVERY) {
    answer();
    unanswered = 0;
  }
};
parentPort.on('message', (m) => {
  handleAndCount(m);
  for (let next; (next = receiveMessageOnPort(parentPort)) !== undefined; ) handleAndCount(next.message);
  answer();
  unanswered = 0;
});
`;

interface Pending {
  resolve(hex: string | undefined): void;
  reject(error: unknown): void;
}

/**
 * One worker thread computing the digests of any number of concurrent downloads. Started on first
 * use, `unref`ed (it never keeps a process alive), stopped by {@link close}; a worker that failed
 * rejects its pending blocks and is replaced by a fresh one on the next {@link hasher} call.
 */
export class Sha512Worker {
  #worker: Worker | undefined;
  #nextJob = 1;
  /** Unanswered requests per job, oldest first. */
  readonly #pending = new Map<number, Pending[]>();
  /** Unanswered requests of all jobs: the thread is ref'ed while some wait, so an awaited digest keeps the process alive. */
  #waiting = 0;

  /** A new running digest computed on the worker thread. Blocks must live in a `SharedArrayBuffer`. */
  hasher(): BlockHasher {
    const worker = this.#start();
    const job = this.#nextJob++;
    const ask = (request: Request): Promise<string | undefined> =>
      new Promise((resolve, reject) => {
        if (this.#worker !== worker) {
          reject(new Error('the SHA-512 worker thread stopped'));
          return;
        }
        let queue = this.#pending.get(job);
        if (queue === undefined) this.#pending.set(job, (queue = []));
        queue.push({ resolve, reject });
        if (this.#waiting++ === 0) worker.ref();
        worker.postMessage(request);
      });
    return {
      async update(block) {
        if (!(block.buffer instanceof SharedArrayBuffer)) throw new TypeError('Sha512Worker hashes blocks of a SharedArrayBuffer only');
        await ask({ job, op: 'update', buffer: block.buffer, offset: block.byteOffset, length: block.byteLength });
      },
      async digest() {
        const hex = await ask({ job, op: 'digest' });
        if (hex === undefined) throw new Error('the SHA-512 worker thread answered a digest without one');
        return hex;
      },
      // Blocks still queued are answered before the drop, so their promises settle as usual.
      dispose: () => {
        if (this.#worker === worker) worker.postMessage({ job, op: 'drop' } satisfies Request);
      },
    };
  }

  /** Stops the thread; pending blocks are rejected. */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined) return;
    this.#fail(worker, new Error('the SHA-512 worker thread was closed'));
    await worker.terminate();
  }

  #start(): Worker {
    if (this.#worker !== undefined) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.unref();
    worker.on('message', (a: Answer) => {
      const queue = this.#pending.get(a.job);
      const settled = queue?.splice(0, a.count) ?? [];
      if (queue?.length === 0) this.#pending.delete(a.job);
      this.#waiting -= settled.length;
      if (this.#waiting === 0) worker.unref();
      for (const p of settled) p.resolve(a.hex);
    });
    worker.on('error', (error) => this.#fail(worker, error));
    worker.on('exit', (code) => this.#fail(worker, new Error(`the SHA-512 worker thread exited with code ${code}`)));
    this.#worker = worker;
    return worker;
  }

  #fail(worker: Worker, error: unknown): void {
    if (this.#worker !== worker) return;
    this.#worker = undefined;
    const all = [...this.#pending.values()].flat();
    this.#pending.clear();
    this.#waiting = 0;
    for (const p of all) p.reject(error);
  }
}
