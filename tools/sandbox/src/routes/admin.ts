import { z } from 'zod';
import type { SandboxContext } from '../context.js';
import { sendBody, sendJson, sendProblem, type Exchange } from '../http/exchange.js';
import { readJson } from '../http/guards.js';
import { parseFaults } from '../faults.js';

/** Prefix of the sandbox's own admin endpoints (not part of the platform). */
export const ADMIN_PREFIX = '/__admin/';

/** True for a loopback peer (127.0.0.0/8, ::1, IPv4-mapped loopback). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

/** Clears counters, plan usage, rate-limit state and restores the config's faults (sequences restart). */
export function resetAll(ctx: SandboxContext): void {
  ctx.stats.reset();
  ctx.accounts.resetUsage();
  ctx.limiter.reset();
  ctx.faults.set(ctx.initialFaults);
}

/**
 * The admin endpoints, answered to loopback clients only (403 otherwise):
 * `GET /__admin/stats`, `GET /__admin/faults`, `PUT /__admin/faults` (body: faults per group,
 * replaces the current set), `POST /__admin/reset`.
 */
export async function handleAdmin(ctx: SandboxContext, ex: Exchange): Promise<void> {
  const area = 'sandbox' as const;
  const docs = ctx.docsUrl;
  if (!isLoopback(ex.req.socket.remoteAddress)) {
    sendProblem(ex, docs, 'loopback-only', { area });
    return;
  }
  const name = ex.path.slice(ADMIN_PREFIX.length);
  const allow = name === 'stats' ? 'GET' : name === 'faults' ? 'GET, PUT' : name === 'reset' ? 'POST' : null;
  if (allow === null) {
    sendProblem(ex, docs, 'not-found', { area, detail: 'Admin endpoints: GET /__admin/stats, GET|PUT /__admin/faults, POST /__admin/reset.' });
    return;
  }
  const method = ex.req.method ?? '';
  if (!allow.split(', ').includes(method)) {
    sendProblem(ex, docs, 'method-not-allowed', { area, headers: { Allow: allow } });
    return;
  }
  if (name === 'stats') {
    sendJson(ex, 200, ctx.stats.snapshot());
  } else if (name === 'reset') {
    resetAll(ctx);
    sendBody(ex, 204, 'text/plain', '');
  } else if (method === 'GET') {
    sendJson(ex, 200, ctx.faults.get());
  } else {
    const body = await readJson(ex);
    if (body === null || !body.ok) {
      sendProblem(ex, docs, 'field-error', { area, violations: [{ fieldName: 'body', message: body === null ? 'The body exceeds 1 MiB.' : body.message }] });
      return;
    }
    try {
      ctx.faults.set(parseFaults(body.value));
    } catch (err) {
      if (!(err instanceof z.ZodError)) throw err;
      const violations = err.issues.map((i) => ({ fieldName: i.path.join('.') || 'body', message: i.message }));
      sendProblem(ex, docs, 'field-error', { area, violations });
      return;
    }
    sendJson(ex, 200, ctx.faults.get());
  }
}
