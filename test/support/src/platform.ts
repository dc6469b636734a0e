import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEngine, createLogger, createTransport } from '@dq/core';
import type { Engine, EngineConfig, Logger, Transport, TransportOptions } from '@dq/core';
import { generateDirtyInputs, startSandbox } from '@dq/sandbox';
import type { Sandbox, SandboxConfig, SandboxLogger } from '@dq/sandbox';

/** The API key of the single account {@link sandboxWith} sets up unless told otherwise. */
export const TEST_KEY = 'integration-key-0001';

/** Account fields as a sandbox config takes them (defaults filled by the sandbox). */
export type AccountInput = Partial<SandboxConfig['accounts'][number]>;

/**
 * Starts a sandbox on port 0 with one account (`TEST_KEY`, everything enabled, contract limits,
 * no quota) changed by `account`, plus any top-level config fields in `extra`. Seed 1 unless given;
 * `log` receives the sandbox's own log events.
 */
export function sandboxWith(account: AccountInput = {}, extra: Partial<SandboxConfig> = {}, seed = 1, log?: SandboxLogger): Promise<Sandbox> {
  return startSandbox({
    port: 0,
    seed,
    ...(log === undefined ? {} : { log }),
    config: { ...extra, accounts: [{ id: 'it', apiKeys: [TEST_KEY], ...account }] },
  });
}

/** A logger at `level` whose lines are kept in memory instead of written. */
export interface CapturingLogger {
  logger: Logger;
  lines: string[];
}

/** A JSON-lines logger (debug level by default) capturing every line it writes. */
export function captureLogger(level: 'debug' | 'info' = 'debug'): CapturingLogger {
  const lines: string[] = [];
  return { logger: createLogger({ level, write: (line) => void lines.push(line) }), lines };
}

/** A transport on `sandbox` with {@link TEST_KEY}, quick retries and the options given. */
export function transportOn(sandbox: Sandbox, options: Partial<TransportOptions> = {}): Transport {
  return createTransport({
    baseUrl: sandbox.url,
    apiKey: TEST_KEY,
    retry: { baseDelayMs: 20, maxDelayMs: 200, maxTotalMs: 20_000 },
    ...options,
  });
}

/** An address engine on `sandbox` with {@link TEST_KEY}, its log captured at info level, and the settings given. */
export function engineOn(sandbox: Sandbox, config: Partial<EngineConfig> = {}): Engine {
  return createEngine({ mode: 'address', baseUrl: sandbox.url, apiKey: TEST_KEY, logger: captureLogger('info').logger, ...config });
}

/** A clean, fully known address of the sandbox's reference data (street, number, postcode, town). */
// A type alias, not an interface, so that it passes as an engine record (an index-signature type).
export type KnownAddress = {
  country: string;
  street: string;
  houseNumber: string;
  postalCode: string;
  locality: string;
};

/**
 * `n` distinct real addresses of `country` from the sandbox's reference data: the truths of the
 * generator's class A inputs (deterministic for a seed).
 */
export function knownAddresses(n: number, country: 'DE' | 'AT' = 'DE', seed = 11): KnownAddress[] {
  const seen = new Set<string>();
  const out: KnownAddress[] = [];
  for (const item of generateDirtyInputs(Math.max(200, n * 20), { seed, country })) {
    const t = item.truth;
    if (item.intendedClass !== 'A' || t === undefined || t.houseNumber === '') continue;
    const a = { country: t.country, street: t.street, houseNumber: t.houseNumber, postalCode: t.postalCode, locality: t.locality };
    const key = JSON.stringify(a);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(a);
    if (out.length === n) return out;
  }
  throw new Error(`the generator gave only ${out.length} class A addresses of ${country}; ask for fewer`);
}

/** Count of answers of `endpoint` with `status` ("200", "429", "reset", ...) in the sandbox's stats. */
export function answered(sandbox: Sandbox, endpoint: string, status: string): number {
  return sandbox.stats().requests[endpoint]?.byStatus[status] ?? 0;
}

/** Requests the sandbox saw on `endpoint`, whatever their outcome. */
export function requestsTo(sandbox: Sandbox, endpoint: string): number {
  return sandbox.stats().requests[endpoint]?.total ?? 0;
}

/**
 * A platform that answers otherwise: `upstream` (the sandbox) behind a proxy, real HTTP both ways,
 * whose JSON answers pass through `rewrite` (say, to give back street names no sandbox answer has).
 * Requests and every other answer go through unchanged.
 */
export async function rewritingPlatform(upstream: string, rewrite: (value: unknown) => unknown): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length', 'keep-alive'].includes(k)) headers[k] = v;
      const answer = await fetch(upstream + (req.url ?? '/'), { method: req.method, headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) });
      let body = Buffer.from(await answer.arrayBuffer());
      if ((answer.headers.get('content-type') ?? '').includes('json') && body.length > 0)
        body = Buffer.from(JSON.stringify(rewrite(JSON.parse(body.toString('utf8')))));
      const out: Record<string, string> = {};
      answer.headers.forEach((v, k) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(k)) out[k] = v;
      });
      res.writeHead(answer.status, out).end(body);
    })().catch((e: unknown) => res.writeHead(502).end(String(e)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
