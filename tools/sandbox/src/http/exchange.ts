import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EndpointKey, StatsRecorder } from '../stats.js';
import { PROBLEMS, REASONS, type ProblemFragment, type Violation } from './problems.js';

/** One request and its response, with what the handlers need to answer it. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly requestId: string;
  /** The URL's path, without the query. */
  readonly path: string;
  /** The raw query string (without `?`), or '' . */
  readonly search: string;
  readonly stats: StatsRecorder;
  /** Stats key; set once the route is known. */
  endpoint: EndpointKey;
  /** Fault injection chose to cut this response's body short. */
  truncate: boolean;
  /** Set once a response has been started (or the socket dropped). */
  done: boolean;
  /** The request's body once read ahead of an injected latency (null: over 1 MiB); see `applyFault`. */
  body?: Buffer | null;
}

export type Headers = Record<string, string | number | readonly string[]>;

/** Writes a complete response, or half of it and then drops the connection when `truncate` is set. */
export function sendBody(ex: Exchange, status: number, contentType: string, body: string | Buffer, headers?: Headers): void {
  if (ex.done) return;
  ex.done = true;
  const res = ex.res;
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', length);
  if (headers !== undefined) for (const name in headers) res.setHeader(name, headers[name] as string);
  ex.stats.response(ex.endpoint, status);
  if (ex.truncate && length > 1) {
    const buf = typeof body === 'string' ? Buffer.from(body) : body;
    res.write(buf.subarray(0, length >> 1), () => res.destroy());
    return;
  }
  // A string body goes out in one write together with the headers (node joins them).
  res.end(body);
}

/** Writes a JSON response (`application/json`). */
export function sendJson(ex: Exchange, status: number, value: unknown, headers?: Headers): void {
  sendBody(ex, status, 'application/json', JSON.stringify(value), headers);
}

/**
 * Writes a problem+json body (contract 7.1): status, type, title, and violations on 400. The type
 * is `<docs_url>/location/problems#<fragment>`; downloads and admin use their own area.
 */
export function sendProblem(
  ex: Exchange,
  docsUrl: string,
  fragment: ProblemFragment,
  extra?: { violations?: Violation[]; detail?: string; headers?: Headers; area?: 'location' | 'download' | 'sandbox' },
): void {
  const p = PROBLEMS[fragment];
  const area = extra?.area ?? 'location';
  const body: Record<string, unknown> = { status: p.status, type: `${docsUrl}/${area}/problems#${fragment}`, title: p.title };
  if (extra?.detail !== undefined) body['detail'] = extra.detail;
  if (extra?.violations !== undefined) body['violations'] = extra.violations;
  sendBody(ex, p.status, 'application/problem+json', JSON.stringify(body), extra?.headers);
}

/** Writes the company/real-time error envelope (contract 2.4): timestamp, status, error, message, path. */
export function sendEnvelopeError(ex: Exchange, status: number, message: string, headers?: Headers): void {
  const body = { timestamp: new Date().toISOString(), status, error: REASONS[status] ?? 'Error', message, path: ex.path };
  sendBody(ex, status, 'application/json', JSON.stringify(body), headers);
}

/** Drops the connection with a TCP reset (injected fault); nothing is written. */
export function resetConnection(ex: Exchange): void {
  if (ex.done) return;
  ex.done = true;
  ex.stats.response(ex.endpoint, 'reset');
  const socket = ex.req.socket;
  if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
  else socket.destroy();
}

/** Maximum request body the sandbox reads, in bytes (1 MiB; the contract states no limit). */
export const MAX_BODY_BYTES = 1 << 20;

/** Reads the whole request body; resolves `null` when it exceeds MAX_BODY_BYTES. */
export function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? null : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

/** True when the Content-Type header declares JSON (`application/json`, any parameters). */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const semi = header.indexOf(';');
  const type = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
  return type === 'application/json';
}
