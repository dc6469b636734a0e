export { createTransport, START_SESSION_PATH } from './transport.js';
export type { Transport, TransportOptions, TransportRequest, TransportResponse, AuthMode, QueryValue } from './types.js';
export { SessionManager } from './session-manager.js';
export type { SessionManagerOptions, StartSession } from './session-manager.js';
export { REQUEST_ID_HEADER } from './http-attempt.js';
export { retry, sleep } from './retry/retrier.js';
export type { AttemptInfo, RetryEvent, RetryRunOptions } from './retry/retrier.js';
export { DEFAULT_RETRY, decideRetry, retryDelay, parseRetryAfter, resolveRetryOptions } from './retry/policy.js';
export type { RetryOptions, RetryDecision } from './retry/policy.js';
