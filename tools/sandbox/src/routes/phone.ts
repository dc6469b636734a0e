import type { SandboxContext } from '../context.js';
import { authenticateRealtime } from '../http/auth.js';
import { sendEnvelopeError, sendJson, type Exchange } from '../http/exchange.js';
import { applyFault, rateLimited } from '../http/guards.js';
import { REASONS } from '../http/problems.js';
import { analysePhone, parsePhoneQuery } from '../phone/analyse.js';
import { phoneDescribe } from '../phone/describe.js';

/**
 * GET describe (contract 4.6) or analyse (docs/platform-contract.md): 405 → injected fault (group `phone`) →
 * 401/403 in the 2.4 envelope → 429 → 400 for bad parameters → 200. Neither is billable.
 */
export async function handlePhone(ctx: SandboxContext, ex: Exchange, kind: 'describe' | 'analyse'): Promise<void> {
  const method = ex.req.method;
  if (method !== 'GET' && method !== 'HEAD') {
    sendEnvelopeError(ex, 405, `Method ${method ?? ''} is not allowed; use GET.`, { Allow: 'GET, HEAD' });
    return;
  }
  if (await applyFault(ctx, ex, 'phone', (status, headers) => sendEnvelopeError(ex, status, `${REASONS[status] ?? 'Error'} (injected fault).`, headers)))
    return;
  const auth = authenticateRealtime(ctx, ex.req, 'phone', false);
  if ('status' in auth) {
    sendEnvelopeError(ex, auth.status, auth.message);
    return;
  }
  const retryAfter = rateLimited(ctx, auth.account, 'phone');
  if (retryAfter !== null) {
    sendEnvelopeError(ex, 429, `Too many requests; retry after ${retryAfter} s.`, { 'Retry-After': retryAfter });
    return;
  }
  if (kind === 'describe') {
    sendJson(ex, 200, phoneDescribe(ctx.baseUrl));
    return;
  }
  const query = parsePhoneQuery(new URLSearchParams(ex.search));
  if (!query.ok) {
    sendEnvelopeError(ex, 400, query.message);
    return;
  }
  sendJson(ex, 200, analysePhone(query.value));
}
