import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { SandboxContext } from '../context.js';
import { ADDRESS_ROUTES, handleAddress } from '../routes/address.js';
import { ADMIN_PREFIX, handleAdmin } from '../routes/admin.js';
import { COMPANY_PATH, handleCompany } from '../routes/company.js';
import { DOWNLOAD_PREFIX, handleDownload } from '../routes/download.js';
import { handlePhone } from '../routes/phone.js';
import { PHONE_ANALYSE_PATH, PHONE_DESCRIBE_PATH } from '../phone/describe.js';
import { sendEnvelopeError, sendProblem, type Exchange } from './exchange.js';
import type { EndpointKey } from '../stats.js';

/**
 * Answers a request the HTTP parser refused (malformed, headers too large), still with a request
 * id; node's default answer has none.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
  socket.end(`HTTP/1.1 ${status}\r\nX-Service-Request-Id: ${randomUUID()}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
}

/**
 * Routes one request. Every response gets a fresh `X-Service-Request-Id` (contract 7.1) before
 * anything else happens, so 404/405/415/429/5xx and injected errors carry one too.
 */
export function createRequestListener(ctx: SandboxContext): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const requestId = randomUUID();
    res.setHeader('X-Service-Request-Id', requestId);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const ex: Exchange = {
      req,
      res,
      requestId,
      path,
      search: q === -1 ? '' : url.slice(q + 1),
      stats: ctx.stats,
      endpoint: endpointOf(path),
      truncate: false,
      done: false,
    };
    // Counted from arrival until the response is finished or the connection closed.
    res.once('close', ctx.stats.started(ex.endpoint));
    route(ctx, ex).catch((err: unknown) => failed(ctx, ex, err));
  };
}

/** The stats key of a request path (`other` for paths no route serves). */
function endpointOf(path: string): EndpointKey {
  const address = ADDRESS_ROUTES[path];
  if (address !== undefined) return address;
  if (path === COMPANY_PATH) return 'company';
  if (path === PHONE_DESCRIBE_PATH) return 'phone-describe';
  if (path === PHONE_ANALYSE_PATH) return 'phone';
  if (path.startsWith(DOWNLOAD_PREFIX)) return 'download';
  if (path.startsWith(ADMIN_PREFIX)) return 'admin';
  return 'other';
}

function route(ctx: SandboxContext, ex: Exchange): Promise<void> {
  const endpoint = ex.endpoint;
  switch (endpoint) {
    case 'company':
      return handleCompany(ctx, ex);
    case 'phone-describe':
      return handlePhone(ctx, ex, 'describe');
    case 'phone':
      return handlePhone(ctx, ex, 'analyse');
    case 'download':
      return handleDownload(ctx, ex);
    case 'admin':
      return handleAdmin(ctx, ex);
    case 'other':
      notFound(ctx, ex);
      return Promise.resolve();
    default:
      return handleAddress(ctx, ex, endpoint);
  }
}

function notFound(ctx: SandboxContext, ex: Exchange): void {
  if (ex.path.startsWith('/companies/') || ex.path.startsWith('/rest/')) {
    sendEnvelopeError(ex, 404, `No service at ${ex.path}.`);
    return;
  }
  const detail = ex.path.startsWith('/location/')
    ? 'Valid endpoints: /location/v1/validate, /location/v1/validate/batch/sync, /location/v1/start-session, /location/v1/autocomplete.'
    : `No endpoint at ${ex.path}.`;
  sendProblem(ex, ctx.docsUrl, 'not-found', { detail });
}

/** A handler threw: answer 500 if nothing was sent yet, and log it without request data. */
function failed(ctx: SandboxContext, ex: Exchange, err: unknown): void {
  // The client went away mid-request: nothing to answer, nothing worth logging.
  if (ex.req.destroyed && (err as { code?: unknown }).code === 'ECONNRESET') return;
  ctx.log({ event: 'handler-failed', requestId: ex.requestId, path: ex.path, message: err instanceof Error ? err.message : String(err) });
  if (ex.done || ex.res.headersSent) {
    ex.res.destroy();
    return;
  }
  const envelope = ex.endpoint === 'company' || ex.endpoint === 'phone' || ex.endpoint === 'phone-describe';
  if (envelope) sendEnvelopeError(ex, 500, `Internal server error; quote request id ${ex.requestId}.`);
  else sendProblem(ex, ctx.docsUrl, 'internal-error', { ...(ex.endpoint === 'download' ? { area: 'download' as const } : {}) });
}
