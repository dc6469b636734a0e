import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEngine, createSilentLogger } from '@dq/core';
import type { Engine, EngineConfig } from '@dq/core';

/**
 * The engine of the engine tests: address mode against `url`, no rate limit, three quick attempts,
 * a silent logger; `extra` overrides any of it.
 */
export function testEngine(url: string, apiKey: string, extra: Partial<EngineConfig> = {}): Engine {
  return createEngine({
    mode: 'address',
    baseUrl: url,
    apiKey,
    rateLimits: { batch: 0 },
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    logger: createSilentLogger(),
    ...extra,
  });
}

export { closeAfterEach } from '@dq/test-support/use';

/** One request as the scripted platform saw it. */
export interface SeenRequest {
  path: string;
  query: URLSearchParams;
  body: Record<string, unknown>;
  authorization: string | undefined;
  requestId: string;
}

/** What a script answers; `delayMs` holds the answer back. */
export interface Answer {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

export type Script = (req: SeenRequest, nth: number) => Answer | Promise<Answer>;

/** A local stand-in for the platform on port 0, answering every request through `script`. */
export interface ScriptedPlatform {
  url: string;
  seen: SeenRequest[];
  /** Requests being answered right now, and the most there ever were at once. */
  maxInFlight: number;
  script: Script;
  close(): Promise<void>;
}

const DOCS = 'https://docs.example.test/location/problems#';

/** A problem+json answer (contract 7.1) with the type fragment of docs/platform-contract.md. */
export function problem(status: number, fragment: string, extra: Record<string, unknown> = {}): Answer {
  return {
    status,
    body: { status, type: `${DOCS}${fragment}`, title: fragment, ...extra },
    headers: { 'content-type': 'application/problem+json' },
  };
}

/** A 200 batch/sync answer of `resultClass` echoing the request's customerAddressId. */
export function batchAnswer(req: SeenRequest, resultClass: string, candidates = 1): Answer {
  const candidate = {
    addressType: 'delivery',
    country: String(req.body['country'] ?? 'DE'),
    postalCode: String(req.body['postalCode'] ?? '10117'),
    locality: String(req.body['locality'] ?? 'Berlin'),
    street: String(req.body['street'] ?? ''),
    houseNumber: String(req.body['houseNumber'] ?? ''),
  };
  return {
    body: {
      customerAddressId: req.body['customerAddressId'],
      resultClass,
      results: Array.from({ length: candidates }, (_, i) => ({ ...candidate, houseNumber: `${i + 1}` })),
    },
  };
}

/** Starts the scripted platform; close it in `afterEach`/`afterAll`. */
export async function startScriptedPlatform(script: Script, host = '127.0.0.1'): Promise<ScriptedPlatform> {
  let inFlight = 0;
  const platform: ScriptedPlatform = {
    url: '',
    seen: [],
    maxInFlight: 0,
    script,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      inFlight += 1;
      platform.maxInFlight = Math.max(platform.maxInFlight, inFlight);
      const url = new URL(req.url ?? '/', 'http://localhost');
      const seen: SeenRequest = {
        path: url.pathname,
        query: url.searchParams,
        body: await readJson(req),
        authorization: req.headers.authorization,
        requestId: `req-${platform.seen.length + 1}`,
      };
      platform.seen.push(seen);
      const answer = await platform.script(seen, platform.seen.length);
      if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
      res.writeHead(answer.status ?? 200, {
        'content-type': 'application/json',
        'x-service-request-id': seen.requestId,
        ...answer.headers,
      });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      inFlight -= 1;
    })();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  platform.url = `http://${host}:${(server.address() as AddressInfo).port}`;
  const close = platform.close;
  platform.close = async () => {
    server.closeAllConnections();
    await close();
  };
  return platform;
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** `n` distinct valid address records; record i has street `Street <i>`. */
export function addresses(n: number, offset = 0): Array<{ street: string; houseNumber: string; postalCode: string; locality: string; country: string }> {
  return Array.from({ length: n }, (_, i) => ({
    street: `Street ${i + offset}`,
    houseNumber: '1',
    postalCode: '10117',
    locality: 'Berlin',
    country: 'DE',
  }));
}
