import { LocalValidationError } from '../errors/dq-error.js';
import type { Violation } from '../errors/dq-error.js';

/** Per-call options of every client method. */
export interface CallOptions {
  /** Aborts the call, retries and waits included. */
  signal?: AbortSignal;
  /** Per-attempt timeout in ms (default: the transport's). */
  timeoutMs?: number;
}

/**
 * Throws a {@link LocalValidationError} naming every refused field when `violations` is not
 * empty: bad input is refused before a paid call.
 */
export function refuseInvalid(what: string, violations: readonly Violation[]): void {
  if (violations.length === 0) return;
  const list = violations.map((v) => `${v.fieldName}: ${v.message}`).join('; ');
  throw new LocalValidationError(`${what} refused before sending; fix these fields: ${list}`, violations);
}

/** Only the call options the transport takes (keeps `undefined` out of the request object). */
export function callOptions(opts: CallOptions | undefined): CallOptions {
  const out: CallOptions = {};
  if (opts?.signal !== undefined) out.signal = opts.signal;
  if (opts?.timeoutMs !== undefined) out.timeoutMs = opts.timeoutMs;
  return out;
}
