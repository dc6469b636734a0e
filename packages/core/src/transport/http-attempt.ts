import { request } from 'undici';
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import { decodeErrorAnswer } from '../errors/decode.js';
import { ContractError, TransportError } from '../errors/dq-error.js';
import { abortedError } from './retry/retrier.js';
import { parseRetryAfter } from './retry/policy.js';

/** Header carrying the platform's request id on every answer (contract 1, 7.1). */
export const REQUEST_ID_HEADER = 'x-service-request-id';

/** One HTTP exchange, credentials already in `headers`. */
export interface Attempt<T> {
  url: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string | undefined;
  schema: z.ZodType<T> | undefined;
  dispatcher: Dispatcher;
  /** Time limit of this exchange in ms, body included. */
  timeoutMs: number;
  signal: AbortSignal | undefined;
  redact: (text: string) => string;
}

/** A 2xx answer of one exchange. */
export interface AttemptResult<T> {
  data: T;
  status: number;
  requestId: string | undefined;
  headers: Record<string, string>;
}

/**
 * Makes one exchange: returns the schema-checked 2xx body, or throws a `PlatformError` (error
 * answer), `ContractError` (2xx body breaking the schema) or `TransportError` (no usable answer).
 */
export async function sendOnce<T>(a: Attempt<T>): Promise<AttemptResult<T>> {
  const timer = new AbortController();
  const timeout = setTimeout(() => timer.abort(), a.timeoutMs);
  const signal = a.signal === undefined ? timer.signal : AbortSignal.any([a.signal, timer.signal]);
  let status = 0;
  let requestId: string | undefined;
  try {
    const res = await request(a.url, {
      method: a.method,
      headers: a.headers,
      body: a.body,
      signal,
      dispatcher: a.dispatcher,
    });
    status = res.statusCode;
    const headers = flattenHeaders(res.headers);
    requestId = headers[REQUEST_ID_HEADER];
    const text = await res.body.text();
    const body = parseBody(text);
    if (status < 200 || status >= 300) {
      throw decodeErrorAnswer({
        status,
        body,
        requestId,
        retryAfterMs: parseRetryAfter(headers['retry-after']),
        redact: a.redact,
      });
    }
    return { data: checkBody(body, text, a, status, requestId), status, requestId, headers };
  } catch (error) {
    throw classify(error, a, timer.signal, status, requestId);
  } finally {
    clearTimeout(timeout);
  }
}

function checkBody<T>(body: unknown, text: string, a: Attempt<T>, status: number, requestId: string | undefined): T {
  if (a.schema === undefined) return body as T;
  const parsed = a.schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const where = parsed.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ');
  const shape = text === '' ? 'an empty body' : typeof body === 'string' ? 'a body that is not JSON' : 'a body';
  throw new ContractError(
    `${a.method} ${a.url.pathname} answered ${status} with ${shape} that breaks the contract (${a.redact(where)}) [request id ${requestId ?? 'none'}]`,
    { status, requestId },
  );
}

const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function classify(error: unknown, a: Attempt<unknown>, timer: AbortSignal, status: number, requestId: string | undefined): unknown {
  if (a.signal?.aborted) return abortedError(a.signal, error);
  const where = `${a.method} ${a.url.origin}${a.url.pathname}`;
  const answered = status === 0 ? '' : ` (HTTP ${status} started, request id ${requestId ?? 'none'})`;
  if (timer.aborted) {
    return new TransportError(`${where}: no complete answer within ${a.timeoutMs} ms${answered}`, {
      code: 'timeout',
      retriable: true,
      cause: error,
    });
  }
  const code = errorCode(error);
  if (code !== undefined && TIMEOUT_CODES.has(code)) {
    return new TransportError(`${where}: timed out (${code})${answered}`, { code: 'timeout', retriable: true, cause: error });
  }
  if (code !== undefined && CONNECTION_CODES.has(code)) {
    return new TransportError(`${where}: connection failed (${code})${answered}; the service may be restarting`, {
      code: 'connection-error',
      retriable: true,
      cause: error,
    });
  }
  if (code === 'ENOTFOUND') {
    return new TransportError(`${where}: host not found; check the base URL`, { code: 'dns-error', retriable: false, cause: error });
  }
  return error;
}

function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code: unknown = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string' && (CONNECTION_CODES.has(code) || TIMEOUT_CODES.has(code) || code === 'ENOTFOUND')) return code;
  }
  return undefined;
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
