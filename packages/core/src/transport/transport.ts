import { apiKeyProblem } from './api-key.js';
import type { Dispatcher } from 'undici';
import { abortedError } from '../errors/aborted.js';
import { DqError, PlatformError } from '../errors/dq-error.js';
import { createSilentLogger } from '../log/logger.js';
import { StartSessionResponseSchema } from '../schemas/index.js';
import { createAgent } from './agent.js';
import { sendOnce } from './http-attempt.js';
import type { AttemptResult } from './http-attempt.js';
import { neverSent } from './http-failure.js';
import { resolveRetryOptions } from './retry/policy.js';
import type { RetryOptions } from './retry/policy.js';
import { retryResolved } from './retry/retrier.js';
import type { RetryEvent } from './retry/retrier.js';
import { HeaderBuilder, TargetCache } from './request-parts.js';
import { SessionManager } from './session-manager.js';
import { failedUnsent, meteredAttempt, requestUnsent } from '../throttle/metered.js';
import type { AuthMode, Transport, TransportOptions, TransportRequest, TransportResponse } from './types.js';

/** Path of the start-session endpoint (contract 4.3). */
export const START_SESSION_PATH = '/location/v1/start-session';

/**
 * Creates the HTTP client every platform call goes through. Layers, outermost first: retry
 * (`retry/`) → auth (API key or the country's session token, renewed once on 403 Expired Session
 * Token) → throttle (`acquire` before every attempt, `ended` when it ends, `backoff` on 429) → one undici exchange with
 * timeout, problem+json / company-envelope decoding and schema parsing (`http-attempt.ts`).
 */
export function createTransport(options: TransportOptions): Transport {
  const baseUrl = checkUrl('baseUrl', options.baseUrl);
  const realtimeUrl = checkUrl('realtimeUrl', options.realtimeUrl ?? options.baseUrl);
  const { apiKey, throttle, origin, timeoutMs = 30_000, connections = 16 } = options;
  const keyProblem = apiKey === undefined ? undefined : apiKeyProblem(apiKey);
  if (keyProblem !== undefined) throw new DqError(keyProblem, { code: 'config-invalid', retriable: false });
  if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be > 0 (ms); got ${timeoutMs}`);
  if (!(Number.isInteger(connections) && connections >= 1)) {
    throw new RangeError(`connections must be a positive integer; got ${connections}`);
  }
  const retryDefaults = resolveRetryOptions(options.retry);
  const logger = options.logger ?? createSilentLogger();
  const redactor = options.redactor ?? logger.redactor;
  redactor.add(apiKey);
  const ownAgent = options.dispatcher === undefined ? createAgent({ connections, keepAliveTimeout: 30_000 }) : undefined;
  const dispatcher = options.dispatcher ?? (ownAgent as Dispatcher);
  const redact = (text: string): string => redactor.redact(text);
  const targets = new TargetCache();
  const headerBuilder = new HeaderBuilder(apiKey, origin);
  const debug = logger.level === 'debug';

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
    const target = targets.target(req.baseUrl ?? baseUrl, req.path, req.query);
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const auth: AuthMode = req.auth ?? 'api-key';
    const country = typeof auth === 'object' ? auth.session : undefined;
    const perAttemptMs = req.timeoutMs ?? timeoutMs;
    const { signal } = req;
    const policy = policyFor(req.retry);
    let attempts = 0;
    /** Attempts whose request went out (the budget let them go, and their connection was made). */
    let sent = 0;
    let renewed = false;

    /**
     * One attempt under the rate budget: the one place where an attempt ends. Whatever its outcome
     * (an answer of any status, a network error, a timeout, an abort by the caller), the budget is
     * told once, the moment it ends, before anything else happens (a retry, a session renewal).
     */
    const sendMetered = async (token: string | undefined, remainingMs: number): Promise<AttemptResult<T>> => {
      let started = 0;
      // Every sender of the endpoint holds back for a 429's Retry-After, but never longer than the
      // retry policy waits: a longer Retry-After stops the run in the retrier instead.
      const res = await meteredAttempt(throttle, { endpoint: req.endpoint, signal, maxHoldMs: policy.maxRetryAfterMs, neverSent }, () => {
        if (debug) started = performance.now();
        return sendOnce({
          target,
          method: req.method,
          headers: headerBuilder.headers(auth === 'none' ? undefined : token, body !== undefined, req.headers),
          body,
          schema: req.schema,
          dispatcher,
          timeoutMs: Math.max(1, Math.min(perAttemptMs, remainingMs)),
          signal,
          redact,
        });
      });
      if (debug) {
        logger.debug('http answer', {
          endpoint: req.endpoint,
          method: req.method,
          path: target.pathname,
          status: res.status,
          requestId: res.requestId,
          ms: Math.round(performance.now() - started),
          attempt: attempts,
        });
      }
      return res;
    };

    const attemptOnce = async (remainingMs: number): Promise<AttemptResult<T>> => {
      let token = country === undefined ? apiKey : await sessions.token(country, signal);
      for (;;) {
        attempts++;
        try {
          const res = await sendMetered(token, remainingMs);
          sent++;
          return res;
        } catch (error) {
          if (!failedUnsent(error)) sent++;
          // Contract 3: an expired token is replaced by a new session and the request repeated, once.
          const expired = error instanceof PlatformError && error.code === 'expired-session-token';
          if (expired && country !== undefined && token !== undefined && !renewed) {
            renewed = true;
            logger.info('session token expired; starting a new session', { country, requestId: (error as PlatformError).requestId });
            token = await sessions.renew(country, token, signal);
            continue;
          }
          throw error;
        }
      }
    };

    // The first attempt is made here; only a failed one enters the retrier (most calls succeed at once).
    if (signal?.aborted) throw abortedError(signal);
    // Monotonic: the retrier's time budget counts from here, unmoved by a step of the wall clock.
    const started = performance.now();
    let res: AttemptResult<T>;
    try {
      res = await attemptOnce(policy.maxTotalMs);
    } catch (error) {
      const onRetry = ({ attempt, error, delayMs }: RetryEvent): void => {
        const e = error instanceof DqError ? error : undefined;
        logger.warn('request failed; retrying', {
          endpoint: req.endpoint,
          path: target.pathname,
          attempt,
          delayMs,
          code: e?.code,
          status: e?.status,
          requestId: e?.requestId,
        });
      };
      try {
        res = await retryResolved(({ remainingMs }) => attemptOnce(remainingMs), policy, {
          signal,
          onRetry,
          failed: { error, elapsedMs: performance.now() - started },
        });
      } catch (last) {
        requestUnsent(last, sent > 0, attempts);
        throw last;
      }
    }
    return { data: res.data, status: res.status, requestId: res.requestId, headers: res.headers, attempts };
  }

  /** The transport's policy, or (rarely) a request's overrides of it, checked. */
  function policyFor(overrides: TransportRequest['retry']): Readonly<RetryOptions> {
    if (overrides === undefined) return retryDefaults;
    return resolveRetryOptions(retryDefaults, overrides === false ? { maxAttempts: 1 } : overrides);
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

function checkUrl(name: string, value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    return value.replace(/\/+$/, '');
  } catch {
    throw new RangeError(`${name} must be an http(s) URL such as https://api.example.com`);
  }
}
