import { setTimeout as sleep } from 'node:timers/promises';
import type { Account } from '../accounts.js';
import { rateLimitOf, type FaultGroup, type RateLimitedEndpoint } from '../config.js';
import type { SandboxContext } from '../context.js';
import { readBody, resetConnection, type Exchange } from './exchange.js';

/**
 * Applies the injected fault of `group` to this request: latency first, then a reset, an error
 * status (answered through `answerError`) or a truncated body (flagged on the exchange).
 * @returns true when the request has been answered (or dropped) and the handler must stop.
 */
export async function applyFault(
  ctx: SandboxContext,
  ex: Exchange,
  group: FaultGroup,
  answerError: (status: number, headers?: Record<string, string>) => void,
): Promise<boolean> {
  const d = ctx.faults.decide(group);
  if (d.latencyMs > 0) {
    ctx.stats.fault(group, 'delayed');
    // The latency is the platform's time to work on a request it has received whole: a client that
    // gives up meanwhile does not take the request back. It is read first, and answered (and billed)
    // after the latency like any other, though nobody may be left to read the answer.
    if (ex.req.method === 'POST' || ex.req.method === 'PUT') ex.body = await readBody(ex.req);
    await sleep(d.latencyMs);
  }
  switch (d.kind) {
    case 'none':
      return false;
    case 'reset':
      ctx.stats.fault(group, 'resets');
      resetConnection(ex);
      return true;
    case 'error':
      ctx.stats.fault(group, 'errors');
      // Read the body first so that a keep-alive connection stays usable after the error.
      if (ex.body === undefined) await readBody(ex.req);
      answerError(d.status, d.retryAfterSeconds === undefined ? undefined : { 'Retry-After': String(d.retryAfterSeconds) });
      return true;
    case 'truncate':
      ctx.stats.fault(group, 'truncations');
      ex.truncate = true;
      return false;
  }
}

/**
 * Takes one request from the account's budget for `endpoint`.
 * @returns null when allowed, else the Retry-After value in whole seconds (at least 1).
 */
export function rateLimited(ctx: SandboxContext, account: Account, endpoint: RateLimitedEndpoint): string | null {
  const wait = ctx.limiter.take(`${account.config.id}\u0000${endpoint}`, rateLimitOf(account.config, endpoint));
  return wait > 0 ? String(Math.max(1, Math.ceil(wait / 1000))) : null;
}

/** The request body parsed as JSON; `{ ok: false }` when it is not valid JSON, `null` when too large. */
export async function readJson(ex: Exchange): Promise<{ ok: true; value: unknown } | { ok: false; message: string } | null> {
  const buf = ex.body !== undefined ? ex.body : await readBody(ex.req);
  if (buf === null) return null;
  try {
    return { ok: true, value: JSON.parse(buf.toString('utf8')) as unknown };
  } catch (err) {
    return { ok: false, message: `The request body is not valid JSON: ${(err as Error).message}` };
  }
}
