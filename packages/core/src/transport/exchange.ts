import type { Dispatcher } from 'undici';
import { unwatchAbort, watchAbort } from '../abort-watch.js';
import type { AbortWatcher } from '../abort-watch.js';

/** What one exchange sends. */
export interface ExchangeOptions {
  /** `http(s)://host[:port]` of the service. */
  origin: string;
  /** Path with query string, starting with `/`. */
  path: string;
  method: 'GET' | 'POST';
  headers: Readonly<Record<string, string>>;
  body: string | undefined;
}

/** A complete answer: status, headers (lower-case names) and the body decoded as UTF-8. */
export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** Response headers as undici hands them over: lower-case names, repeated ones as arrays. */
export type IncomingHttpHeaders = Record<string, string | string[] | undefined>;

const BOM = 0xfeff;

/**
 * One HTTP exchange on an undici dispatcher, the body collected in memory. Uses undici's handler
 * API instead of `request()`: no Readable stream, no AsyncResource and no AbortSignal per exchange
 * (the per-record cost of the engine is mostly here). Ends in one of three ways:
 * - resolves with the whole answer (any status);
 * - rejects with the caller's abort reason as soon as `signal` fires ({@link callerAborted} set);
 * - rejects once `timeoutMs` has passed without the complete answer, body included
 *   ({@link timedOut} set), the socket then being cut so a late answer cannot arrive on it.
 * Anything else (connection refused, reset, parser errors) rejects with undici's error.
 */
export class Exchange implements Dispatcher.DispatchHandler, AbortWatcher {
  /** Status of the answer once its headers arrived; 0 before. */
  status = 0;
  /** Headers of the answer once they arrived. */
  headers: IncomingHttpHeaders | undefined;
  timedOut = false;
  callerAborted = false;
  /** Settles with the exchange; see the class comment. */
  readonly done: Promise<RawAnswer>;

  #chunks: Buffer[] = [];
  #controller: Dispatcher.DispatchController | undefined;
  /** Set when the exchange was cut before undici started it: abort it the moment it starts. */
  #cut: Error | undefined;
  #settled = false;
  #timer: NodeJS.Timeout | undefined;
  #signal: AbortSignal | undefined;
  #resolve!: (answer: RawAnswer) => void;
  #reject!: (error: unknown) => void;

  constructor(dispatcher: Dispatcher, options: ExchangeOptions, timeoutMs: number, signal: AbortSignal | undefined) {
    this.done = new Promise<RawAnswer>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    if (signal?.aborted) {
      this.callerAborted = true;
      this.#settled = true;
      this.#reject(signal.reason);
      return;
    }
    this.#timer = setTimeout(() => this.#onTimeout(timeoutMs), timeoutMs);
    if (signal !== undefined) {
      this.#signal = signal;
      watchAbort(signal, this);
    }
    dispatcher.dispatch(options, this);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // undici may start a request again when the connection it was queued on fails: start afresh.
    this.#chunks = [];
    if (this.#cut !== undefined) controller.abort(this.#cut);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx answers come before the final one; only the last call counts.
    this.status = statusCode;
    this.headers = headers;
    this.#chunks = [];
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    const chunks = this.#chunks;
    const buffer = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    let text = buffer.toString('utf8');
    if (text.charCodeAt(0) === BOM) text = text.slice(1);
    this.#settle();
    this.#resolve({ status: this.status, headers: this.headers ?? {}, text });
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.#settled) return;
    this.#settle();
    this.#reject(error);
  }

  onCallerAbort(reason: unknown): void {
    if (this.#settled) return;
    this.callerAborted = true;
    this.#cutShort(reason instanceof Error ? reason : new Error('aborted by the caller', { cause: reason }));
  }

  #onTimeout(timeoutMs: number): void {
    if (this.#settled) return;
    this.timedOut = true;
    this.#cutShort(new Error(`no complete answer within ${timeoutMs} ms`));
  }

  #cutShort(reason: Error): void {
    this.#settle();
    if (this.#controller === undefined) this.#cut = reason;
    else if (!this.#controller.aborted) this.#controller.abort(reason);
    this.#reject(reason);
  }

  #settle(): void {
    this.#settled = true;
    clearTimeout(this.#timer);
    if (this.#signal !== undefined) unwatchAbort(this.#signal, this);
    this.#chunks = [];
  }
}
