import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import type { Logger } from '../log/logger.js';
import type { Redactor } from '../log/redactor.js';
import type { EndpointId, Throttle } from '../throttle/types.js';
import type { RetryOptions } from './retry/policy.js';
import type { SessionManager } from './session-manager.js';

/**
 * Credential of one request: the API key, a session token of a country (started and renewed by the
 * transport's {@link SessionManager}), or none (SHA512 checksum downloads).
 */
export type AuthMode = 'api-key' | 'none' | { readonly session: string };

/** Query parameter values; `undefined` ones are left out. */
export type QueryValue = string | number | boolean | undefined;

/** One logical request; the transport makes as many attempts as the retry policy allows. */
export interface TransportRequest<T = unknown> {
  /** Rate-limit bucket (throttle) this request counts against. */
  endpoint: EndpointId;
  method: 'GET' | 'POST';
  /** Path below the base URL, starting with `/` (e.g. `/location/v1/validate`). */
  path: string;
  /** Base URL for this request (default: the transport's `baseUrl`); company and phone use `realtimeUrl`. */
  baseUrl?: string;
  query?: Readonly<Record<string, QueryValue>>;
  /** JSON body, sent with `Content-Type: application/json`. */
  body?: unknown;
  /** Default `api-key`. */
  auth?: AuthMode;
  /** Schema the 2xx body must match; without it the parsed JSON is returned as `unknown`. */
  schema?: z.ZodType<T>;
  /** Extra headers (never credentials: use `auth`). */
  headers?: Readonly<Record<string, string>>;
  /** Abort the request, pending attempts and backoff sleeps included. */
  signal?: AbortSignal;
  /** Per-attempt timeout in ms (default: the transport's `timeoutMs`). */
  timeoutMs?: number;
  /** Overrides of the transport's retry options for this request; `false` = one attempt only. */
  retry?: Partial<RetryOptions> | false;
}

/** A successful (2xx) answer. */
export interface TransportResponse<T> {
  /** The body, parsed as JSON and checked against the request's schema. */
  data: T;
  status: number;
  /** `X-Service-Request-Id` of the answer (undefined only if the server sent none). */
  requestId: string | undefined;
  /** Response headers, lower-case names, repeated headers joined with `, `. */
  headers: Readonly<Record<string, string>>;
  /** Attempts made, the first one included (a session renewal's repeat counts as one). */
  attempts: number;
}

/** Options of {@link createTransport}. */
export interface TransportOptions {
  /** Address-API host, e.g. `https://api.example.com` (no trailing path needed). */
  baseUrl: string;
  /** Real-time services host (company, phone); default `baseUrl`. */
  realtimeUrl?: string;
  /** API key, sent as `Authorization: Bearer <key>`; never logged or put in error messages. */
  apiKey?: string;
  /** Per-attempt timeout in ms, body included (default 30 000). */
  timeoutMs?: number;
  /** Keep-alive connections per origin (default 16). Ignored when `dispatcher` is given. */
  connections?: number;
  /** Rate limiter consulted before every attempt (default: none). */
  throttle?: Throttle;
  /** Retry policy (defaults in {@link DEFAULT_RETRY}). */
  retry?: Partial<RetryOptions>;
  /** Session token lifetime in ms (default 180 000, docs/platform-contract.md). */
  sessionLifetimeMs?: number;
  /** Renew a session token this many ms before it expires (default 30 000). */
  sessionRenewBeforeMs?: number;
  /** `Origin` header sent with every request (start-session and autocomplete check it, 5.3). */
  origin?: string;
  /** Logger (default: silent). The API key and session tokens are registered with its redactor. */
  logger?: Logger;
  /** Redactor for text taken from answers (default: the logger's). */
  redactor?: Redactor;
  /** undici dispatcher to use instead of an own keep-alive `Agent` (not closed by `close()`). */
  dispatcher?: Dispatcher;
}

/** The HTTP client every platform call goes through. */
export interface Transport {
  /** Sends `req` (with throttle, retries and session handling) and returns the parsed 2xx answer. */
  request<T>(req: TransportRequest<T>): Promise<TransportResponse<T>>;
  /** Session tokens per country, shared by every request of this transport. */
  readonly sessions: SessionManager;
  readonly baseUrl: string;
  readonly realtimeUrl: string;
  readonly logger: Logger;
  /** Redactor holding the API key and every session token issued; apply it to text you show. */
  readonly redactor: Redactor;
  /** Closes the keep-alive pool (if the transport created it). */
  close(): Promise<void>;
}
