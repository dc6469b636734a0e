import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { DownloadArtifact, SandboxContext } from '../context.js';
import type { PositionedReader } from '../download/store.js';
import { bearerOf, refusalMessage } from '../http/auth.js';
import { sendProblem, type Exchange } from '../http/exchange.js';
import { applyFault, rateLimited } from '../http/guards.js';
import { fragmentForStatus } from '../http/problems.js';

/** Prefix of the download API (contract 4.4, 4.5). */
export const DOWNLOAD_PREFIX = '/download/v1/';

/** A byte range to serve, inclusive bounds. */
interface ByteRange {
  start: number;
  end: number;
}

/**
 * The single range asked for by a `Range` header (RFC 9110 14.1.2), `'unsatisfiable'` for a range
 * that starts past the end, or null to serve the whole file (no header, a syntax this server does
 * not take, or several ranges — all allowed to be ignored).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | null {
  if (header === undefined) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (m === null) return null;
  const [, first = '', last = ''] = m;
  if (first === '' && last === '') return null;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
}

/**
 * GET/HEAD under /download/v1/: 405 → injected fault → 404 from the store → 401/403 (API key as
 * Bearer; `.sha512` needs none) → 429 → 200 or 206 (one range) or 416. Error bodies are
 * problem+json with type `<docs_url>/download/problems#<fragment>` (the contract shows none).
 */
export async function handleDownload(ctx: SandboxContext, ex: Exchange): Promise<void> {
  const docs = ctx.docsUrl;
  const area = 'download' as const;
  const method = ex.req.method;
  if (method !== 'GET' && method !== 'HEAD') {
    sendProblem(ex, docs, 'method-not-allowed', { area, headers: { Allow: 'GET, HEAD' } });
    return;
  }
  if (await applyFault(ctx, ex, 'download', (status, headers) => sendProblem(ex, docs, fragmentForStatus(status), { area, ...(headers && { headers }) })))
    return;
  const found = ctx.downloads.lookup(ex.path);
  if ('notFound' in found) {
    sendProblem(ex, docs, 'not-found', { area, detail: found.message });
    return;
  }
  if (found.auth) {
    const key = bearerOf(ex.req);
    if (key === null) {
      sendProblem(ex, docs, 'no-auth-data', { area, detail: 'Send "Authorization: Bearer <API key>".' });
      return;
    }
    const account = ctx.accounts.byKey(key);
    if (account === undefined) {
      sendProblem(ex, docs, 'api-key-invalid', { area });
      return;
    }
    const refusal = ctx.accounts.refusal(account, 'download', null, false);
    if (refusal !== null) {
      sendProblem(ex, docs, refusal, { area, detail: refusalMessage(refusal) });
      return;
    }
    const retryAfter = rateLimited(ctx, account, 'download');
    if (retryAfter !== null) {
      sendProblem(ex, docs, 'too-many-requests', { area, headers: { 'Retry-After': retryAfter } });
      return;
    }
  }
  // RFC 9110 13.1.5: a Range under an If-Range that does not match is ignored and the whole file sent.
  // The sandbox issues no validator (no ETag, no Last-Modified), so no If-Range can match.
  const range = ex.req.headers['if-range'] === undefined ? parseRange(ex.req.headers.range, found.size) : null;
  if (range === 'unsatisfiable') {
    sendProblem(ex, docs, 'range-not-satisfiable', { area, headers: { 'Content-Range': `bytes */${found.size}`, 'Accept-Ranges': 'bytes' } });
    return;
  }
  serveFile(ex, found, range);
}

function serveFile(ex: Exchange, file: DownloadArtifact, range: ByteRange | null): void {
  const res = ex.res;
  const start = range?.start ?? 0;
  const end = range?.end ?? file.size - 1;
  const length = Math.max(0, end - start + 1);
  const status = range === null ? 200 : 206;
  res.statusCode = status;
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Length', length);
  res.setHeader('Accept-Ranges', 'bytes');
  if (file.contentDisposition !== undefined) res.setHeader('Content-Disposition', file.contentDisposition);
  if (range !== null) res.setHeader('Content-Range', `bytes ${start}-${end}/${file.size}`);
  ex.done = true;
  ex.stats.response(ex.endpoint, status);
  if (ex.req.method === 'HEAD' || length === 0) {
    res.end();
    return;
  }
  // A truncated response promises `length` bytes and sends half of them, then drops the connection.
  const sent = ex.truncate ? Math.max(1, length >> 1) : length;
  // end() of the socket flushes what was written, then closes short of Content-Length.
  const finish = () => (ex.truncate ? res.socket?.end() : res.end());
  const open = (file as { open?: () => Promise<PositionedReader> }).open;
  if (open !== undefined) {
    sendPooled(res, open, start, sent).then(finish, (err: Error) => res.destroy(err));
    return;
  }
  const stream = file.read(start, start + sent - 1) as Readable;
  pipeline(stream, res, { end: false }).then(finish, (err: Error) => res.destroy(err));
}

const POOL_BUFFER = 1024 * 1024; // bytes per read and per socket write of a large file
const IN_FLIGHT = 4; // buffers one response reads into or has written and not yet flushed
const pool: Buffer[] = []; // free buffers shared by all responses, at most POOL_MAX
const POOL_MAX = 16;

/**
 * Sends `length` bytes from `start` through a few reused buffers: each is read into, written to
 * the socket, and read into again once the socket took it. Stops when the client goes away.
 */
async function sendPooled(res: ServerResponse, open: () => Promise<PositionedReader>, start: number, length: number): Promise<void> {
  const reader = await open();
  const free: Buffer[] = [];
  let waiter: (() => void) | undefined;
  const give = (b: Buffer) => {
    free.push(b);
    const w = waiter;
    waiter = undefined;
    w?.();
  };
  const gone = () => waiter?.();
  res.on('close', gone);
  try {
    for (let i = 0; i < IN_FLIGHT; i++) free.push(pool.pop() ?? Buffer.allocUnsafeSlow(POOL_BUFFER));
    for (let at = 0; at < length && !res.destroyed;) {
      const buf = free.pop();
      if (buf === undefined) {
        await new Promise<void>((resolve) => (waiter = resolve));
        continue;
      }
      const n = await reader.read(buf, Math.min(POOL_BUFFER, length - at), start + at);
      if (n === 0) throw new Error(`download file ended at byte ${start + at}, before the ${length} bytes announced`);
      at += n;
      res.write(buf.subarray(0, n), () => give(buf));
    }
    // Wait until the socket took every buffer, so all of them can go back to the pool.
    while (free.length < IN_FLIGHT && !res.destroyed) await new Promise<void>((resolve) => (waiter = resolve));
  } finally {
    res.off('close', gone);
    await reader.close();
    // A buffer the socket still holds (connection gone) is dropped, not pooled: it may be written later.
    if (free.length === IN_FLIGHT) while (free.length > 0 && pool.length < POOL_MAX) pool.push(free.pop() as Buffer);
  }
}
