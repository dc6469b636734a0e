/**
 * One GET of the download API, answered as a status, headers and a body stream; error answers and
 * socket failures become the core's typed errors so the core retrier can decide on them.
 */
import type { Readable } from 'node:stream';
import { request } from 'undici';
import type { Dispatcher } from 'undici';
import { decodeErrorAnswer } from '../errors/decode.js';
import { DqError, PlatformError, TransportError } from '../errors/dq-error.js';
import { abortedError } from '../errors/aborted.js';
import { REQUEST_ID_HEADER, classifyFailure, flattenHeaders, parseBody } from '../transport/http-failure.js';
import { parseRetryAfter } from '../transport/retry/policy.js';
import { DOWNLOAD_CODES } from './errors.js';

const MAX_ERROR_BODY = 64 * 1024; // bytes of an error answer worth reading

/** A GET of the download API. */
export interface GetRequest {
  url: URL;
  headers: Record<string, string>;
  dispatcher: Dispatcher;
  /** Ms allowed for the headers and for any silence between body chunks. */
  timeoutMs: number;
  signal: AbortSignal | undefined;
  /** Least progress of a body (see {@link MinProgress}); none when undefined. */
  minProgress?: MinProgress | undefined;
}

/**
 * The least a body must bring: at least `bytes` in every `windowMs` (windows in which the reader
 * held the body back, e.g. a slow disk, do not count). A server that trickles slower breaks the body
 * with a retriable `download-stalled`, as a silence longer than the timeout does.
 */
export interface MinProgress {
  bytes: number;
  windowMs: number;
}

/** A 2xx (or the caller-handled 416) answer whose body is still to be read. */
export interface GetResponse {
  status: number;
  headers: Record<string, string>;
  requestId: string | undefined;
  /** The body, taken from the socket as it arrives; consume it once (`writeBody`, {@link dump}, {@link text}). */
  body: EarlyBody;
}

/** Receives a body's chunks in order, then its end: `error` set when it broke, `complete` when it ended normally. */
export interface BodySink {
  data(chunk: Buffer): void;
  done(error: unknown, complete: boolean): void;
}

const EARLY_MAX = 8 * 1024 * 1024; // bytes held before a consumer attaches, then the socket is paused

/**
 * A body read from the moment the headers arrive. Before a consumer attaches, chunks are held (up
 * to 8 MiB) and a break is remembered: a plain stream destroyed by a dropped connection discards
 * what it had buffered and emits its error to nobody, yet a download must keep those bytes so the
 * next attempt can resume after them. After {@link attach}, chunks go straight to the sink.
 */
export class EarlyBody {
  readonly #stream: Readable;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #sink: BodySink | undefined;
  #end: { error: unknown; complete: boolean } | undefined;

  #guard: ReturnType<typeof setInterval> | undefined;
  /** Whether the reader held the body back during the current window of the progress guard. */
  #heldBack = false;

  /** `stalled` makes the error a body slower than `minProgress` breaks with (bytes in the window, bytes in all). */
  constructor(stream: Readable, minProgress?: MinProgress, stalled?: (inWindow: number, received: number) => Error) {
    this.#stream = stream;
    if (minProgress !== undefined && stalled !== undefined) {
      let inWindow = 0;
      let received = 0;
      stream.on('data', (chunk: Buffer) => {
        inWindow += chunk.length;
        received += chunk.length;
      });
      this.#guard = setInterval(() => {
        if (!this.#heldBack && !stream.isPaused() && inWindow < minProgress.bytes) stream.destroy(stalled(inWindow, received));
        inWindow = 0;
        this.#heldBack = stream.isPaused();
      }, minProgress.windowMs);
      this.#guard.unref();
    }
    stream.on('data', (chunk: Buffer) => {
      if (this.#sink !== undefined) {
        this.#sink.data(chunk);
        return;
      }
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes > EARLY_MAX) {
        this.#heldBack = true;
        stream.pause();
      }
    });
    stream.once('end', () => this.#finish(undefined, true));
    stream.once('error', (e: unknown) => this.#finish(e, false));
    // closed without 'end' or 'error': the consumer sees a short body and checks the length
    stream.once('close', () => this.#finish(undefined, false));
  }

  /** Hands the held chunks to `sink` at once, then the rest as it arrives, then the end. Call once. */
  attach(sink: BodySink): void {
    if (this.#sink !== undefined) throw new Error('a response body can be read only once');
    this.#sink = sink;
    const held = this.#held;
    this.#held = [];
    this.#heldBytes = 0;
    for (const chunk of held) sink.data(chunk);
    if (this.#end !== undefined) sink.done(this.#end.error, this.#end.complete);
    else this.#stream.resume();
  }

  /** Stops the socket's reads (backpressure) until {@link resume}. */
  pause(): void {
    this.#heldBack = true;
    this.#stream.pause();
  }

  resume(): void {
    if (this.#end === undefined) this.#stream.resume();
  }

  /** Gives the body up, releasing its connection. */
  destroy(): void {
    if (this.#end === undefined) this.#stream.destroy();
  }

  #finish(error: unknown, complete: boolean): void {
    if (this.#end !== undefined) return;
    clearInterval(this.#guard);
    this.#end = { error, complete };
    this.#sink?.done(error, complete);
  }
}

/** Reads and drops the rest of a body; rejects when it broke. */
export function dump(body: EarlyBody): Promise<void> {
  return new Promise((resolve, reject) => body.attach({ data: () => undefined, done: (error) => (error === undefined ? resolve() : reject(error)) }));
}

/** A whole (small) body as UTF-8 text; rejects when it broke. */
export function text(body: EarlyBody): Promise<string> {
  const parts: Buffer[] = [];
  return new Promise((resolve, reject) =>
    body.attach({ data: (c) => parts.push(c), done: (error) => (error === undefined ? resolve(Buffer.concat(parts).toString('utf8')) : reject(error)) }),
  );
}

/**
 * Sends the GET; returns 2xx and 416 answers with their body unread, throws a `PlatformError` for
 * other statuses (message naming the path) and a `TransportError` when no answer came.
 */
export async function get(r: GetRequest): Promise<GetResponse> {
  let res: Dispatcher.ResponseData;
  try {
    res = await request(r.url, {
      method: 'GET',
      headers: r.headers,
      dispatcher: r.dispatcher,
      signal: r.signal,
      headersTimeout: r.timeoutMs,
      bodyTimeout: r.timeoutMs,
    });
  } catch (error) {
    throw classifyGetFailure(error, r, undefined);
  }
  const headers = flattenHeaders(res.headers);
  const requestId = headers[REQUEST_ID_HEADER];
  if ((res.statusCode >= 200 && res.statusCode < 300) || res.statusCode === 416) {
    const min = r.minProgress;
    const stalled = min && ((inWindow: number, received: number) => stalledError(r.url, min, inWindow, received, requestId));
    return { status: res.statusCode, headers, requestId, body: new EarlyBody(res.body, min, stalled) };
  }
  // Decoded once, whole: a UTF-8 character split between two chunks must not turn into U+FFFD twice.
  const chunks: Buffer[] = [];
  let kept = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (kept >= MAX_ERROR_BODY) continue; // read on, so the connection can be reused
      chunks.push(chunk);
      kept += chunk.length;
    }
  } catch {
    // the status is what matters; a broken error body changes nothing
  }
  const text = Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY).toString('utf8');
  const decoded = decodeErrorAnswer({
    status: res.statusCode,
    body: parseBody(text),
    requestId,
    retryAfterMs: parseRetryAfter(headers['retry-after']),
  });
  // The contract shows no error bodies for downloads (7, last line), so their retriability follows the
  // status alone (7.1's rule: 5xx may be retried), whatever problem type a server puts in the body.
  const retriable = decoded.retriable || res.statusCode >= 500 || res.statusCode === 429;
  throw new PlatformError(`GET ${r.url.pathname}: ${redirectMessage(res.statusCode, headers['location'], r.url, requestId) ?? decoded.message}`, {
    code: decoded.code,
    retriable,
    scope: decoded.scope,
    status: decoded.status,
    requestId: decoded.requestId,
    violations: decoded.violations,
    problemType: decoded.problemType,
    title: decoded.title,
    retryAfterMs: decoded.retryAfterMs,
    cause: decoded,
  });
}

/** A body that came slower than `min`: what came, how fast, and that the retry resumes (no credentials: origin and path only). */
function stalledError(url: URL, min: MinProgress, inWindow: number, received: number, requestId: string | undefined): DqError {
  return new DqError(
    `GET ${url.origin}${url.pathname}: the server sent ${inWindow} bytes in the last ${min.windowMs} ms ` +
      `(${((inWindow * 1000) / min.windowMs).toFixed(1)} B/s; ${received} bytes in this answer), ` +
      `less than the minimum of ${min.bytes} bytes per ${min.windowMs} ms; the download resumes where it stopped [request id ${requestId ?? 'none'}]`,
    { code: DOWNLOAD_CODES.stalled, retriable: true, requestId },
  );
}

/**
 * What a 3xx answer means for the user: redirects are not followed (the API key would be sent to
 * wherever they point), so the message names the target to configure instead. Undefined for other
 * statuses or without a usable `Location`.
 */
function redirectMessage(status: number, location: string | undefined, from: URL, requestId: string | undefined): string | undefined {
  if (status < 300 || status >= 400 || location === undefined) return undefined;
  let to: string;
  try {
    to = new URL(location, from).href;
  } catch {
    return undefined;
  }
  return `the server redirects (HTTP ${status}) to ${to}; redirects are not followed (the API key would go along): use that host as the download URL [request id ${requestId ?? 'none'}]`;
}

/**
 * Maps a failure while requesting or reading a body to a core error: the caller's abort,
 * a timeout or a connection failure (both retriable), DNS failure (not retriable); anything else
 * (e.g. a disk error while writing) is returned unchanged and so never retried.
 */
export function classifyGetFailure(error: unknown, r: Pick<GetRequest, 'url' | 'signal' | 'timeoutMs'>, requestId: string | undefined): unknown {
  if (r.signal?.aborted) return abortedError(r.signal, error);
  if (error instanceof PlatformError || error instanceof TransportError) return error;
  return classifyFailure(error, {
    where: `GET ${r.url.origin}${r.url.pathname}`,
    origin: r.url.origin,
    suffix: requestId === undefined ? '' : ` [request id ${requestId}]`,
    timeout: `nothing received for ${r.timeoutMs} ms`,
    reconnect: 'the download resumes where it stopped',
    url: 'download URL',
  });
}
