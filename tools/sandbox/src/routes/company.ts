import type { SandboxContext } from '../context.js';
import { authenticateRealtime, refusalMessage } from '../http/auth.js';
import { isJsonContentType, sendEnvelopeError, sendJson, type Exchange } from '../http/exchange.js';
import { applyFault, rateLimited, readJson } from '../http/guards.js';
import { REASONS } from '../http/problems.js';

/** Path of the company validation service (contract 4.7). */
export const COMPANY_PATH = '/companies/v2';

/**
 * POST /companies/v2: 405 → injected fault → 401/403 (2.4 envelope) → 429 → media type → body → the company
 * service (400s and hits) → X-Total-Count on success. Only successful calls are billed.
 */
export async function handleCompany(ctx: SandboxContext, ex: Exchange): Promise<void> {
  if (ex.req.method !== 'POST') {
    sendEnvelopeError(ex, 405, `Method ${ex.req.method ?? ''} is not allowed; use POST.`, { Allow: 'POST' });
    return;
  }
  if (await applyFault(ctx, ex, 'company', (status, headers) => sendEnvelopeError(ex, status, `${REASONS[status] ?? 'Error'} (injected fault).`, headers)))
    return;
  const auth = authenticateRealtime(ctx, ex.req, 'company', true);
  if ('status' in auth) {
    sendEnvelopeError(ex, auth.status, auth.message);
    return;
  }
  const retryAfter = rateLimited(ctx, auth.account, 'company');
  if (retryAfter !== null) {
    sendEnvelopeError(ex, 429, `Too many requests; retry after ${retryAfter} s.`, { 'Retry-After': retryAfter });
    return;
  }
  // 4.7: the body is JSON. A body declared as anything else is an invalid body (7.2: 400).
  if (!isJsonContentType(ex.req.headers['content-type'])) {
    sendEnvelopeError(ex, 400, 'Declare the body with "Content-Type: application/json;charset=UTF-8".');
    return;
  }
  const body = await readJson(ex);
  if (body === null) {
    sendEnvelopeError(ex, 400, 'The request body exceeds 1 MiB.');
    return;
  }
  const query = new URLSearchParams(ex.search);
  const result = ctx.company.handle(query, body.ok ? body.value : undefined, ex.path);
  if (result.status === 200 && !ctx.accounts.bill(auth.account)) {
    sendEnvelopeError(ex, 403, refusalMessage('quota-exhausted'));
    return;
  }
  const headers = result.totalCount === undefined ? undefined : { 'X-Total-Count': String(result.totalCount) };
  sendJson(ex, result.status, result.body, headers);
}
