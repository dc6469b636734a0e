import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeAfterEach } from '@dq/test-support/use';
import type { Transport } from '../src/transport/index.js';

/** A request as the test server saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Body parsed as JSON (or raw text, or undefined when empty). */
  body: unknown;
  /** `performance.now()` when the request arrived, in ms. */
  at: number;
}

/** What the scripted server answers. */
export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  /** Objects are sent as JSON; strings as they are. */
  body?: unknown;
  /** Wait this long (ms) before answering. */
  delayMs?: number;
  /** Destroy the socket instead of answering (a connection reset). */
  destroy?: boolean;
}

export type Handler = (req: SeenRequest, index: number) => Reply | Promise<Reply>;

/** A real HTTP server on port 0, scripted per test, counting what it receives. */
export interface TestServer {
  url: string;
  requests: SeenRequest[];
  /** Requests whose path starts with `prefix`. */
  count(prefix: string): number;
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1:0. Every answer carries `X-Service-Request-Id: req-<n>` unless the reply sets one. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: SeenRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const text = Buffer.concat(chunks).toString('utf8');
      const seen: SeenRequest = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: text === '' ? undefined : tryJson(text),
        at: performance.now(),
      };
      const index = requests.push(seen) - 1;
      void Promise.resolve(handler(seen, index)).then(async (reply) => {
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
        if (reply.destroy) {
          req.socket.destroy();
          return;
        }
        const body = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
        const headers: Record<string, string> = {
          'x-service-request-id': `req-${index + 1}`,
          ...(typeof reply.body === 'object' ? { 'content-type': 'application/json' } : {}),
          ...reply.headers,
        };
        if (!res.destroyed) res.writeHead(reply.status ?? 200, headers).end(body);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    count: (prefix) => requests.filter((r) => r.path.startsWith(prefix)).length,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The scripted server and the transport a test opened, to be closed when it ends. */
export interface Opened {
  server: TestServer | undefined;
  transport: Transport | undefined;
}

/**
 * Call once at a test file's top level: a test puts the server and transport it opens here, and
 * after each test both are closed (the transport first, so its keep-alive pool never outlives the
 * server) and forgotten.
 */
export function useServerAndTransport(): Opened {
  const opened: Opened = { server: undefined, transport: undefined };
  closeAfterEach(
    () => [opened.transport, opened.server],
    () => (opened.transport = opened.server = undefined),
  );
  return opened;
}

/** Replies in order; the last one repeats. */
export function sequence(...replies: Reply[]): Handler {
  return (_req, index) => replies[Math.min(index, replies.length - 1)] ?? { status: 500 };
}

/** A problem+json reply (contract 7.1) of the given type fragment. */
export function problem(status: number, fragment: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Reply {
  return {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
    body: { type: `https://docs.example.com/location/problems#${fragment}`, title: fragment, status, ...extra },
  };
}

/** A company error envelope reply (contract 2.4). */
export function companyError(status: number, error: string, message: string): Reply {
  return { status, body: { timestamp: '2024-05-01T10:00:00.000+0000', status, error, message, path: '/companies/v2' } };
}

/** A validation result body (contract 2.2). */
export const CLASS_A = {
  resultClass: 'A',
  results: [{ addressType: 'delivery', country: 'DE', postalCode: '10117', locality: 'Berlin', street: 'Unter den Linden', houseNumber: '1' }],
};

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
