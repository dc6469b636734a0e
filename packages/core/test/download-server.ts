/**
 * A scriptable download server for the client tests: real HTTP on port 0, Range support, and
 * per-request faults (503, cut bodies, ignored ranges). It records every request it saw.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * `cut`: half the body, then the connection is dropped; `stall`: half the body, then silence;
 * `trickle`: half the body, then one byte every 100 ms, never silent for long;
 * `reset`: the connection is dropped before any answer; `hang`: no answer at all, the connection kept open.
 */
export type Fault = 'ok' | '503' | 'cut' | 'ignore-range' | 'stall' | 'trickle' | '429' | 'problem-split' | 'reset' | 'hang';

/** Title of the problem+json 404 that the `problem-split` fault sends with a UTF-8 character cut between two writes. */
export const SPLIT_TITLE = 'Datei für Größe nicht gefunden';

export interface ServedFile {
  body: Buffer;
  /** Require `Authorization: Bearer <key>` (default true). */
  auth?: boolean;
  contentDisposition?: string;
  contentType?: string;
  /** Sent as `ETag`; a request whose `If-Range` differs gets the whole file (RFC 9110 13.1.5). */
  etag?: string;
  /** Sent as `Last-Modified`, with a `Date` one minute later; compared with `If-Range` like `etag`. */
  lastModified?: Date;
  /** Whole-file answers carry no `Content-Length` (chunked transfer, as behind a re-chunking proxy). */
  chunked?: boolean;
  /** Whole-file answers announce this many bytes more than they send, then the connection is closed. */
  overstateBy?: number;
}

export interface SeenRequest {
  path: string;
  range: string | undefined;
  ifRange: string | undefined;
  authorization: string | undefined;
  /** `performance.now()` when the request arrived. */
  at: number;
}

export interface TestServer {
  url: string;
  files: Map<string, ServedFile>;
  /** Faults used by the next requests, in order; `ok` once the list is empty. */
  faults: Fault[];
  seen: SeenRequest[];
  /** `Retry-After` sent with the `429` fault (default `1`). */
  retryAfter: string;
  /** Bytes of file bodies sent. */
  bytesSent: number;
  close(): Promise<void>;
}

export const API_KEY = 'test-key-5ecret-ABC';

export async function startDownloadServer(): Promise<TestServer> {
  const state = { files: new Map<string, ServedFile>(), faults: [] as Fault[], seen: [] as SeenRequest[], retryAfter: '1', bytesSent: 0 };
  const server: Server = createServer((req: IncomingMessage, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    state.seen.push({
      path,
      range: req.headers.range,
      ifRange: req.headers['if-range'] as string | undefined,
      authorization: req.headers.authorization,
      at: performance.now(),
    });
    const fault = state.faults.shift() ?? 'ok';
    res.setHeader('X-Service-Request-Id', `req-${state.seen.length}`);
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault === 'hang') return;
    if (fault === '503') {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('busy');
      return;
    }
    if (fault === '429') {
      res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': state.retryAfter }).end('slow down');
      return;
    }
    if (fault === 'problem-split') {
      const bytes = Buffer.from(JSON.stringify({ status: 404, type: 'https://docs.example.invalid/download/problems#file-withdrawn', title: SPLIT_TITLE }));
      const cut = bytes.indexOf(Buffer.from('ü')) + 1; // after the first of the two bytes of ü
      res.writeHead(404, { 'content-type': 'application/problem+json', 'content-length': bytes.length });
      res.write(bytes.subarray(0, cut), () => setTimeout(() => res.end(bytes.subarray(cut)), 50));
      return;
    }
    const file = state.files.get(path);
    if (file === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such file');
      return;
    }
    if ((file.auth ?? true) && req.headers.authorization !== `Bearer ${API_KEY}`) {
      res.writeHead(401, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ status: 401, type: 'https://docs.example.invalid/location/problems#api-key-invalid', title: 'API Key Invalid' }));
      return;
    }
    const size = file.body.length;
    const headers: Record<string, string | number> = { 'content-type': file.contentType ?? 'application/zip', 'accept-ranges': 'bytes' };
    if (file.contentDisposition !== undefined) headers['content-disposition'] = file.contentDisposition;
    if (file.etag !== undefined) headers['etag'] = file.etag;
    if (file.lastModified !== undefined) {
      headers['last-modified'] = file.lastModified.toUTCString();
      headers['date'] = new Date(file.lastModified.getTime() + 60_000).toUTCString();
    }
    const ifRange = req.headers['if-range'];
    const current = ifRange === undefined ? true : ifRange === file.etag || ifRange === headers['last-modified'];
    let start = 0;
    const end = size - 1;
    let status = 200;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (m !== null && fault !== 'ignore-range' && current) {
      start = Number(m[1]);
      if (start >= size) {
        res.writeHead(416, { ...headers, 'content-range': `bytes */${size}` }).end();
        return;
      }
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${size}`;
    }
    const part = file.body.subarray(start, end + 1);
    if (status === 200 && file.chunked === true) {
      res.writeHead(status, headers);
      state.bytesSent += part.length;
      const half = Math.floor(part.length / 2);
      if (fault === 'cut') {
        state.bytesSent -= part.length - half;
        res.write(part.subarray(0, half), () => setTimeout(() => res.destroy(), 20));
        return;
      }
      res.write(part.subarray(0, half));
      res.end(part.subarray(half));
      return;
    }
    if (status === 200 && file.overstateBy !== undefined) {
      res.writeHead(status, { ...headers, 'content-length': part.length + file.overstateBy });
      state.bytesSent += part.length;
      res.write(part, () => setTimeout(() => res.destroy(), 20));
      return;
    }
    headers['content-length'] = end - start + 1;
    res.writeHead(status, headers);
    if (fault === 'cut' || fault === 'stall') {
      const half = part.subarray(0, Math.floor(part.length / 2));
      state.bytesSent += half.length;
      res.write(half, () => {
        if (fault === 'cut') setTimeout(() => res.destroy(), 20);
      });
      return; // 'stall' keeps the socket open and silent
    }
    if (fault === 'trickle') {
      let at = Math.floor(part.length / 2);
      state.bytesSent += at;
      res.write(part.subarray(0, at));
      const drip = setInterval(() => {
        if (res.destroyed || at >= part.length - 1) return clearInterval(drip);
        state.bytesSent++;
        res.write(part.subarray(at, ++at));
      }, 100);
      res.on('close', () => clearInterval(drip));
      return;
    }
    state.bytesSent += part.length;
    res.end(part);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as TestServer;
}
