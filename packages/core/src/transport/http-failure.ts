/**
 * The one place that reads an HTTP exchange's failures and answers for every platform call: the
 * API calls (`http-attempt.ts`) and the download API's GETs (`download/http.ts`) both use it, so a
 * socket error code means the same thing to both.
 */
import { DqError, TransportError } from '../errors/dq-error.js';
import { proxyShownFor } from './agent.js';

/** Header carrying the platform's request id on every answer (docs/platform-contract.md). */
export const REQUEST_ID_HEADER = 'x-service-request-id';

/** Socket/undici codes of a connection that failed or broke: retriable, the next attempt reconnects. */
export const CONNECTION_CODES: ReadonlySet<string> = new Set([
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
  // the body ended before (or ran past) its Content-Length: the connection broke mid-answer
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);
/** undici's own header/body timeouts: retriable. */
export const TIMEOUT_CODES: ReadonlySet<string> = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The first known failure code (connection, timeout, DNS) on `error` or its causes. */
export function failureCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code: unknown = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string' && (CONNECTION_CODES.has(code) || TIMEOUT_CODES.has(code) || code === 'ENOTFOUND')) return code;
  }
  return undefined;
}

/**
 * Codes of a connection that was never made: refused, no route, the host not found, the connect
 * timed out. A request that failed with one of them was never written, so the platform cannot
 * have counted it. A connection that broke or timed out once made may have carried the request.
 */
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Whether the attempt that failed with `error` never reached the platform: its connection (to the
 * platform or to the proxy) was never made, or the proxy refused the tunnel to it. Such an attempt
 * is not a call sent (the run report's `apiCalls` and the spending cap's count).
 */
export function neverSent(error: unknown): boolean {
  const code = failureCode(error);
  return (code !== undefined && NOT_CONNECTED_CODES.has(code)) || proxyRefusal(error) !== undefined;
}

/** How a failure is worded for the user in one kind of call. */
export interface FailureWording {
  /** `METHOD origin/path`, the start of every message. */
  where: string;
  /** The request's origin, to name the proxy it went through, if any. */
  origin: string;
  /** Appended after the code: e.g. the request id of an answer that had started. */
  suffix: string;
  /** What a timeout means here, e.g. `nothing received for 30000 ms`. */
  timeout: string;
  /** What happens after a broken connection, e.g. `the service may be restarting`. */
  reconnect: string;
  /** Which URL to check when the host is not found. */
  url: string;
}

/**
 * Maps a socket failure to a `TransportError`: timeout and connection failure (retriable), host not
 * found (not retriable). Any other error is returned unchanged, and so never retried.
 */
export function classifyFailure(error: unknown, w: FailureWording): unknown {
  const refused = proxyRefusal(error);
  if (refused !== undefined) return proxyFailure(refused, error, w);
  const code = failureCode(error);
  if (code === undefined) return error;
  const proxy = proxyShownFor(w.origin);
  const via = proxy === undefined ? '' : ` through the proxy ${proxy}`;
  if (TIMEOUT_CODES.has(code)) {
    return new TransportError(`${w.where}${via}: ${w.timeout} (${code})${w.suffix}`, { code: 'timeout', retriable: true, cause: error });
  }
  if (CONNECTION_CODES.has(code)) {
    return new TransportError(
      `${w.where}${via}: connection failed (${code})${w.suffix}; ${proxy === undefined ? w.reconnect : 'the proxy or the service may be restarting'}`,
      {
        code: 'connection-error',
        retriable: true,
        cause: error,
      },
    );
  }
  return new TransportError(`${w.where}: host not found; check the ${w.url}`, { code: 'dns-error', retriable: false, cause: error });
}

/** undici's error when a proxy answers a tunnel request (CONNECT) with another status than 200. */
const PROXY_REFUSAL = /^Proxy response \((\d{3})\) !== 200 when HTTP Tunneling$/;

/** The status a proxy refused the tunnel with, if that is what `error` (or a cause) is. */
function proxyRefusal(error: unknown): number | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const m = PROXY_REFUSAL.exec(e.message);
    if (m) return Number(m[1]);
  }
  return undefined;
}

/**
 * A proxy that refused the tunnel: for its credentials (407) or its rules (403) a person must act,
 * so the run stops (exit 3, like a refused API key); any other status (502, 503, 504: it could not
 * reach the platform) is a connection failure, retried.
 */
function proxyFailure(status: number, error: unknown, w: FailureWording): DqError {
  const proxy = proxyShownFor(w.origin) ?? 'the proxy in HTTPS_PROXY / HTTP_PROXY';
  if (status === 407 || status === 403) {
    const what =
      status === 407
        ? 'HTTP 407 Proxy Authentication Required): check the user and password in its URL (HTTPS_PROXY / HTTP_PROXY)'
        : 'HTTP 403 Forbidden): ask for this host to be let through, or name it in NO_PROXY if it is reached directly';
    return new DqError(`${w.where}: the proxy ${proxy} refused the connection (${what}`, {
      code: 'proxy-refused',
      retriable: false,
      scope: 'run',
      cause: error,
    });
  }
  return new TransportError(`${w.where}: the proxy ${proxy} could not connect (HTTP ${status})${w.suffix}; the proxy or the service may be restarting`, {
    code: 'connection-error',
    retriable: true,
    cause: error,
  });
}

/** An answer's body: undefined when empty, the JSON value, or the text itself when it is not JSON. */
export function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** One header's value; a repeated header (an array) joined with `, `. */
export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Headers as lower-case name → single string (undici hands over lower-case names; repeats as arrays). */
export function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) {
    const value = headerValue(headers[name]);
    if (value !== undefined) out[name] = value;
  }
  return out;
}
