import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import { decodeErrorAnswer } from '../errors/decode.js';
import { ContractError, TransportError } from '../errors/dq-error.js';
import { Exchange } from './exchange.js';
import { abortedError } from '../errors/aborted.js';
import { REQUEST_ID_HEADER, classifyFailure, flattenHeaders, headerValue, parseBody } from './http-failure.js';
import { parseRetryAfter } from './retry/policy.js';

export { REQUEST_ID_HEADER } from './http-failure.js';

/** Where one request goes, worked out once per request (not per attempt). */
export interface Target {
  /** `http(s)://host[:port]`. */
  origin: string;
  /** Path and query string sent. */
  path: string;
  /** Path without the query string, for messages and logs. */
  pathname: string;
}

/** One HTTP exchange, credentials already in `headers`. */
export interface Attempt<T> {
  target: Target;
  method: 'GET' | 'POST';
  headers: Readonly<Record<string, string>>;
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
  const { target } = a;
  const exchange = new Exchange(
    a.dispatcher,
    { origin: target.origin, path: target.path, method: a.method, headers: a.headers, body: a.body },
    a.timeoutMs,
    a.signal,
  );
  let answer;
  try {
    answer = await exchange.done;
  } catch (error) {
    throw classify(error, a, exchange);
  }
  const { status, text } = answer;
  const headers = flattenHeaders(answer.headers);
  const requestId = headers[REQUEST_ID_HEADER];
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
    `${a.method} ${a.target.pathname} answered ${status} with ${shape} that breaks the contract (${a.redact(where)}) [request id ${requestId ?? 'none'}]`,
    { status, requestId },
  );
}

function classify(error: unknown, a: Attempt<unknown>, exchange: Exchange): unknown {
  if (exchange.callerAborted || a.signal?.aborted) return abortedError(a.signal, error);
  const where = `${a.method} ${a.target.origin}${a.target.pathname}`;
  const { status } = exchange;
  const requestId = status === 0 ? undefined : headerValue(exchange.headers?.[REQUEST_ID_HEADER]);
  const answered = status === 0 ? '' : ` (HTTP ${status} started, request id ${requestId ?? 'none'})`;
  if (exchange.timedOut) {
    return new TransportError(`${where}: no complete answer within ${a.timeoutMs} ms${answered}`, {
      code: 'timeout',
      retriable: true,
      cause: error,
    });
  }
  return classifyFailure(error, {
    where,
    origin: a.target.origin,
    suffix: answered,
    timeout: 'timed out',
    reconnect: 'the service may be restarting',
    url: 'base URL',
  });
}
