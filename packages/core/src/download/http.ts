/**
 * One GET of the download API, answered as a status, headers and a body stream; error answers and
 * socket failures become the core's typed errors so the core retrier can decide on them.
 */
import { request } from 'undici';
import type { Dispatcher } from 'undici';
import { decodeErrorAnswer } from '../errors/decode.js';
import { PlatformError, TransportError } from '../errors/dq-error.js';
import { abortedError } from '../transport/retry/retrier.js';
import { parseRetryAfter } from '../transport/retry/policy.js';

/** Header carrying the platform's request id (contract 1, 7.1). */
const REQUEST_ID = 'x-service-request-id';
const MAX_ERROR_BODY = 64 * 1024; // bytes of an error answer worth reading

/** A GET of the download API. */
export interface GetRequest {
  url: URL;
  headers: Record<string, string>;
  dispatcher: Dispatcher;
  /** Ms allowed for the headers and for any silence between body chunks. */
  timeoutMs: number;
  signal: AbortSignal | undefined;
}

/** A 2xx (or the caller-handled 416) answer whose body is still to be read. */
export interface GetResponse {
  status: number;
  headers: Record<string, string>;
  requestId: string | undefined;
  /** The body, taken from the socket as it arrives (see {@link eagerBody}); iterate it once. */
  body: AsyncIterable<Buffer>;
}

const EAGER_MAX = 8 * 1024 * 1024; // bytes held in memory before the socket is paused

/**
 * Reads `body` from the moment the headers arrive and hands its chunks out in order, the error (if
 * any) only after every chunk received before it. A plain stream destroyed by a dropped connection
 * discards what it had buffered; a download must keep those bytes so the next attempt can resume
 * after them.
 */
export function eagerBody(body: NodeJS.ReadableStream & { destroy(): void }): AsyncIterable<Buffer> {
  const queue: Buffer[] = [];
  let queued = 0;
  let done = false;
  let error: unknown;
  let wake: (() => void) | undefined;
  const signal = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  body.on('data', (c: Buffer) => {
    queue.push(c);
    queued += c.length;
    if (queued > EAGER_MAX) body.pause();
    signal();
  });
  body.on('end', () => {
    done = true;
    signal();
  });
  body.on('error', (e: unknown) => {
    error = e;
    done = true;
    signal();
  });
  // closed without 'end' or 'error': the caller sees a short body and checks the length
  body.on('close', () => {
    done = true;
    signal();
  });
  return {
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          const chunk = queue.shift();
          if (chunk !== undefined) {
            queued -= chunk.length;
            if (body.isPaused() && queued < EAGER_MAX / 2) body.resume();
            yield chunk;
            continue;
          }
          if (done) {
            if (error !== undefined) throw error;
            return;
          }
          await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        if (!done) body.destroy();
      }
    },
  };
}

/** Reads and drops the rest of a body. */
export async function dump(body: AsyncIterable<Buffer>): Promise<void> {
  for await (const _ of body) {
    // discard
  }
}

/** A whole (small) body as UTF-8 text. */
export async function text(body: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of body) parts.push(c);
  return Buffer.concat(parts).toString('utf8');
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
    throw classifyFailure(error, r, undefined);
  }
  const headers = flatten(res.headers);
  const requestId = headers[REQUEST_ID];
  if ((res.statusCode >= 200 && res.statusCode < 300) || res.statusCode === 416) {
    return { status: res.statusCode, headers, requestId, body: eagerBody(res.body) };
  }
  let text = '';
  try {
    for await (const chunk of res.body) {
      if (text.length < MAX_ERROR_BODY) text += String(chunk);
    }
  } catch {
    // the status is what matters; a broken error body changes nothing
  }
  const decoded = decodeErrorAnswer({
    status: res.statusCode,
    body: parseJson(text),
    requestId,
    retryAfterMs: parseRetryAfter(headers['retry-after']),
  });
  // The contract shows no error bodies for downloads (7, last line), so their retriability follows the
  // status alone (7.1's rule: 5xx may be retried), whatever problem type a server puts in the body.
  const retriable = decoded.retriable || res.statusCode >= 500 || res.statusCode === 429;
  throw new PlatformError(`GET ${r.url.pathname}: ${decoded.message}`, {
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

const CONNECTION = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH']);
const TIMEOUT = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Maps a failure while requesting or reading a body to a core error: the caller's abort,
 * a timeout or a connection failure (both retriable), DNS failure (not retriable); anything else
 * (e.g. a disk error while writing) is returned unchanged and so never retried.
 */
export function classifyFailure(error: unknown, r: Pick<GetRequest, 'url' | 'signal' | 'timeoutMs'>, requestId: string | undefined): unknown {
  if (r.signal?.aborted) return abortedError(r.signal, error);
  if (error instanceof PlatformError || error instanceof TransportError) return error;
  const where = `GET ${r.url.origin}${r.url.pathname}`;
  const rid = requestId === undefined ? '' : ` [request id ${requestId}]`;
  const code = codeOf(error);
  if (code !== undefined && TIMEOUT.has(code)) {
    return new TransportError(`${where}: nothing received for ${r.timeoutMs} ms (${code})${rid}`, { code: 'timeout', retriable: true, cause: error });
  }
  if (code !== undefined && CONNECTION.has(code)) {
    return new TransportError(`${where}: connection failed (${code})${rid}; the download resumes where it stopped`, { code: 'connection-error', retriable: true, cause: error });
  }
  if (code === 'ENOTFOUND') {
    return new TransportError(`${where}: host not found; check the download URL`, { code: 'dns-error', retriable: false, cause: error });
  }
  return error;
}

function codeOf(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code: unknown = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string' && (CONNECTION.has(code) || TIMEOUT.has(code) || code === 'ENOTFOUND')) return code;
  }
  return undefined;
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function flatten(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
