import { TransportError } from './dq-error.js';

/**
 * The error of a call the caller aborted (its `AbortSignal` fired): a `TransportError` with code
 * `aborted`, never retried. An abort error already raised in flight is passed through unchanged.
 */
export function abortedError(signal: AbortSignal | undefined, inFlight?: unknown): TransportError {
  if (inFlight instanceof TransportError && inFlight.code === 'aborted') return inFlight;
  return new TransportError('Request aborted by the caller', {
    code: 'aborted',
    retriable: false,
    cause: inFlight ?? signal?.reason,
  });
}
