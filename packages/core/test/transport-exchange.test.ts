import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { TransportError } from '../src/errors/index.js';
import { AddressResultSchema } from '../src/schemas/index.js';
import { createTransport } from '../src/transport/index.js';
import type { Transport } from '../src/transport/index.js';

/** A raw HTTP server on port 0 whose handler writes the answer itself (headers, chunks, stalls). */
async function rawServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

let server: Server | undefined;
let transport: Transport | undefined;
afterEach(async () => {
  await transport?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  transport = server = undefined;
});

const CLASS_A = '{"resultClass":"A","results":[{"locality":"Köln","street":"Hohe Straße"}]}';
const validate = (t: Transport, opts: { signal?: AbortSignal; timeoutMs?: number } = {}) =>
  t.request({ endpoint: 'validate', method: 'POST', path: '/location/v1/validate', body: { localityLine: 'Köln' }, schema: AddressResultSchema, ...opts });

describe('one HTTP exchange', () => {
  test('the time limit covers the body: headers at once and a stalled body end as a timeout naming the request id', async () => {
    ({ server } = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': 'req-slow-body' });
      res.write('{"resultClass":'); // and nothing more
    }));
    transport = createTransport({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: 'k',
      timeoutMs: 150,
      retry: { maxAttempts: 1 },
    });
    const started = performance.now();
    const e = await validate(transport).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(TransportError);
    expect((e as TransportError).code).toBe('timeout');
    expect((e as TransportError).message).toContain('HTTP 200 started, request id req-slow-body');
    // Ended by the 150 ms limit: not before it (the body's wait counts), and not much after it.
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(145);
    expect(elapsed).toBeLessThan(1_000);
  });

  test('a body split inside a multi-byte character and led by a byte-order mark is read as the JSON it is', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(CLASS_A, 'utf8')]);
    const cut = bytes.indexOf(Buffer.from('ö', 'utf8')) + 1; // between the two bytes of "ö"
    ({ server } = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': 'req-split' });
      res.write(bytes.subarray(0, cut));
      setTimeout(() => res.end(bytes.subarray(cut)), 20);
    }));
    transport = createTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'k' });
    const res = await validate(transport);
    expect(res.data.results[0]?.locality).toBe('Köln');
    expect(res.requestId).toBe('req-split');
  });

  test('one caller signal shared by many requests aborts all of them at once, without a max-listeners warning', async () => {
    ({ server } = await rawServer(() => undefined)); // never answers
    transport = createTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'k', connections: 4 });
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const controller = new AbortController();
      const calls = Array.from({ length: 40 }, () => validate(transport as Transport, { signal: controller.signal }).catch((err: unknown) => err));
      await new Promise((r) => setTimeout(r, 100));
      const started = performance.now();
      controller.abort();
      const errors = await Promise.all(calls);
      expect(performance.now() - started).toBeLessThan(500);
      expect(errors.map((err) => (err as TransportError).code)).toEqual(Array(40).fill('aborted'));
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  test('a signal that has already fired sends nothing', async () => {
    let seen = 0;
    ({ server } = await rawServer((_req, res) => {
      seen++;
      res.end(CLASS_A);
    }));
    transport = createTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'k' });
    const e = await validate(transport, { signal: AbortSignal.abort() }).catch((err: unknown) => err);
    expect((e as TransportError).code).toBe('aborted');
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toBe(0);
  });

  test('a base URL with a path keeps it, and query values are encoded', async () => {
    const urls: string[] = [];
    ({ server } = await rawServer((req, res) => {
      urls.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"companies":[]}');
    }));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/gateway/`;
    transport = createTransport({ baseUrl: base, apiKey: 'k' });
    await transport.request({
      endpoint: 'company',
      method: 'GET',
      path: '/companies/v2',
      query: { searchMethod: 'company', q: 'Müller & Söhne', skip: undefined },
    });
    await transport.request({ endpoint: 'company', method: 'GET', path: 'companies/v2' });
    expect(urls).toEqual(['/gateway/companies/v2?searchMethod=company&q=M%C3%BCller+%26+S%C3%B6hne', '/gateway/companies/v2']);
  });

  test('an answer cut short of its Content-Length is a connection failure: retried, and the retry answers', async () => {
    let seen = 0;
    ({ server } = await rawServer((_req, res) => {
      seen++;
      if (seen === 1) {
        // promises more bytes than it sends, then closes: undici reports a content-length mismatch
        const promised = Buffer.byteLength(CLASS_A) + 40;
        res.socket?.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${promised}\r\nConnection: close\r\n\r\n${CLASS_A}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': 'req-second' }).end(CLASS_A);
    }));
    transport = createTransport({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: 'k',
      retry: { maxAttempts: 3, baseDelayMs: 1 },
    });
    const res = await validate(transport);
    expect(res.data.results[0]?.locality).toBe('Köln');
    expect(res.attempts).toBe(2);
    expect(res.requestId).toBe('req-second');
  });
});
