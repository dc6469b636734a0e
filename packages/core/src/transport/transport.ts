import { Agent } from 'undici';
import { DqError, PlatformError } from '../errors/dq-error.js';
import { createSilentLogger } from '../log/logger.js';
import { StartSessionResponseSchema } from '../schemas/index.js';
import { sendOnce } from './http-attempt.js';
import type { AttemptResult } from './http-attempt.js';
import { resolveRetryOptions } from './retry/policy.js';
import { retry } from './retry/retrier.js';
import { SessionManager } from './session-manager.js';
import type { AuthMode, QueryValue, Transport, TransportOptions, TransportRequest, TransportResponse } from './types.js';

/** Path of the start-session endpoint (contract 4.3). */
export const START_SESSION_PATH = '/location/v1/start-session';

/**
 * Creates the HTTP client every platform call goes through. Layers, outermost first: retry
 * (`retry/`) → auth (API key or the country's session token, renewed once on 403 Expired Session
 * Token) → throttle (`acquire` before every attempt, `backoff` on 429) → one undici exchange with
 * timeout, problem+json / company-envelope decoding and schema parsing (`http-attempt.ts`).
 */
export function createTransport(options: TransportOptions): Transport {
  const baseUrl = checkUrl('baseUrl', options.baseUrl);
  const realtimeUrl = checkUrl('realtimeUrl', options.realtimeUrl ?? options.baseUrl);
  const { apiKey, throttle, origin, timeoutMs = 30_000, connections = 16 } = options;
  if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be > 0 (ms); got ${timeoutMs}`);
  if (!(Number.isInteger(connections) && connections >= 1)) {
    throw new RangeError(`connections must be a positive integer; got ${connections}`);
  }
  const retryDefaults = resolveRetryOptions(options.retry);
  const logger = options.logger ?? createSilentLogger();
  const redactor = options.redactor ?? logger.redactor;
  redactor.add(apiKey);
  const ownAgent = options.dispatcher === undefined ? new Agent({ connections, keepAliveTimeout: 30_000 }) : undefined;
  const dispatcher = options.dispatcher ?? (ownAgent as Agent);
  const redact = (text: string): string => redactor.redact(text);

  const sessions = new SessionManager({
    lifetimeMs: options.sessionLifetimeMs,
    renewBeforeMs: options.sessionRenewBeforeMs,
    start: async (country) => {
      const res = await request({
        endpoint: 'start-session',
        method: 'POST',
        path: START_SESSION_PATH,
        body: { country },
        schema: StartSessionResponseSchema,
      });
      // Registered before anyone can log it; used verbatim (contract 5.4).
      redactor.add(res.data._sessionToken);
      logger.info('session started', { country, requestId: res.requestId });
      return res.data._sessionToken;
    },
  });

  async function request<T>(req: TransportRequest<T>): Promise<TransportResponse<T>> {
    const url = buildUrl(req.baseUrl ?? baseUrl, req.path, req.query);
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const auth: AuthMode = req.auth ?? 'api-key';
    const country = typeof auth === 'object' ? auth.session : undefined;
    const perAttemptMs = req.timeoutMs ?? timeoutMs;
    let attempts = 0;
    let renewed = false;

    const attemptOnce = async (remainingMs: number): Promise<AttemptResult<T>> => {
      let token = country === undefined ? apiKey : await sessions.token(country, req.signal);
      for (;;) {
        attempts++;
        await throttle?.acquire(req.endpoint, req.signal);
        const started = performance.now();
        try {
          const res = await sendOnce({
            url,
            method: req.method,
            headers: headersFor(auth === 'none' ? undefined : token, body !== undefined, origin, req.headers),
            body,
            schema: req.schema,
            dispatcher,
            timeoutMs: Math.max(1, Math.min(perAttemptMs, remainingMs)),
            signal: req.signal,
            redact,
          });
          logger.debug('http answer', {
            endpoint: req.endpoint,
            method: req.method,
            path: url.pathname,
            status: res.status,
            requestId: res.requestId,
            ms: Math.round(performance.now() - started),
            attempt: attempts,
          });
          return res;
        } catch (error) {
          if (error instanceof PlatformError && error.status === 429) throttle?.backoff(req.endpoint, error.retryAfterMs);
          // Contract 3: an expired token is replaced by a new session and the request repeated, once.
          const expired = error instanceof PlatformError && error.code === 'expired-session-token';
          if (expired && country !== undefined && token !== undefined && !renewed) {
            renewed = true;
            logger.info('session token expired; starting a new session', { country, requestId: (error as PlatformError).requestId });
            token = await sessions.renew(country, token, req.signal);
            continue;
          }
          throw error;
        }
      }
    };

    const overrides = req.retry === false ? { maxAttempts: 1 } : req.retry;
    const res = await retry(({ remainingMs }) => attemptOnce(remainingMs), {
      ...retryDefaults,
      ...overrides,
      signal: req.signal,
      onRetry: ({ attempt, error, delayMs }) => {
        const e = error instanceof DqError ? error : undefined;
        logger.warn('request failed; retrying', {
          endpoint: req.endpoint,
          path: url.pathname,
          attempt,
          delayMs,
          code: e?.code,
          status: e?.status,
          requestId: e?.requestId,
        });
      },
    });
    return { ...res, attempts };
  }

  return {
    request,
    sessions,
    baseUrl,
    realtimeUrl,
    logger,
    redactor,
    close: async () => {
      await ownAgent?.close();
    },
  };
}

function headersFor(
  credential: string | undefined,
  hasBody: boolean,
  origin: string | undefined,
  extra: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
  if (hasBody) headers['content-type'] = 'application/json';
  if (origin !== undefined) headers['origin'] = origin;
  for (const [name, value] of Object.entries(extra ?? {})) {
    if (name.toLowerCase() !== 'authorization') headers[name.toLowerCase()] = value;
  }
  if (credential !== undefined) headers['authorization'] = `Bearer ${credential}`;
  return headers;
}

function buildUrl(base: string, path: string, query: Readonly<Record<string, QueryValue>> | undefined): URL {
  const url = new URL(base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`));
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, String(value));
  }
  return url;
}

function checkUrl(name: string, value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    return value.replace(/\/+$/, '');
  } catch {
    throw new RangeError(`${name} must be an http(s) URL such as https://api.example.com`);
  }
}
