import { request as httpRequest, createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, freshTarget, removeTargets, runCli, sandboxWith } from './helpers.js';

// `--timeout-ms` (default 30 000): how long one attempt of a download waits for the answer's
// headers, and for the next chunk of a body. The sync runs against a proxy in front of the sandbox
// that holds chosen requests back, and measures when the CLI gives an attempt up (it closes the
// connection). A server that never answers makes a sync give up only after the download client's
// 6 attempts (over 3 minutes with the default), so the default is measured on one attempt, and the
// give-up (exit 75 and its message) with a small explicit value.

const DEFAULT_TIMEOUT_MS = 30_000;

/** What the proxy does with a request: forward it (after `delayMs`), never answer, or send half of its body and stop. */
type Plan = { forward: number } | 'stall' | 'stall-body';

interface Seen {
  path: string;
  /** Ms after the request arrived that the client closed its connection before the answer was complete. */
  closedAfterMs?: number;
}

interface Proxy {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

function fetchUpstream(upstream: string, req: IncomingMessage): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'range']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name];
    const up = httpRequest(new URL(req.url ?? '/', upstream), { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string' && k !== 'connection' && k !== 'keep-alive') out[k] = v;
        resolve({ status: res.statusCode ?? 502, headers: out, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    up.on('error', reject);
    up.end();
  });
}

/** A proxy to `upstream` that treats the `nth` request (1-based) of each path as `plan` says. */
async function startProxy(upstream: string, plan: (path: string, nth: number) => Plan): Promise<Proxy> {
  const seen: Seen[] = [];
  const counts = new Map<string, number>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const nth = (counts.get(path) ?? 0) + 1;
    counts.set(path, nth);
    const entry: Seen = { path };
    seen.push(entry);
    const arrived = Date.now();
    res.on('close', () => {
      if (!res.writableFinished) entry.closedAfterMs = Date.now() - arrived;
    });
    const p = plan(path, nth);
    if (p === 'stall') return;
    if (p === 'stall-body') {
      void fetchUpstream(upstream, req).then((up) => {
        res.writeHead(up.status, up.headers);
        res.write(up.body.subarray(0, Math.floor(up.body.length / 2)));
      });
      return;
    }
    setTimeout(() => {
      if (res.destroyed) return;
      void fetchUpstream(upstream, req).then(
        (up) => res.writeHead(up.status, up.headers).end(up.body),
        () => res.destroy(),
      );
    }, p.forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const VERSION_TXT = '/download/v1/data/post/version.txt';
const DE_001 = /^\/download\/v1\/data\/post\/DE\/release-v3\/\d{4}-\d{2}-01\/DE_001\.zip$/;

let sandbox: Sandbox | undefined;
const proxies: Proxy[] = [];
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await sandbox?.close();
  removeTargets();
});

async function proxy(plan: (path: string, nth: number) => Plan): Promise<Proxy> {
  sandbox ??= await sandboxWith();
  const p = await startProxy(sandbox.url, plan);
  proxies.push(p);
  return p;
}

function sync(p: Proxy, extra: string[] = []) {
  const args = ['sync', '--target', freshTarget(), '--products', 'post', '--countries', 'DE', '--release', 'release-v3', '--platform', 'linux_x64', ...extra];
  return runCli(args, { DQ_DOWNLOAD_URL: p.url, DQ_API_KEY: DEFAULT_API_KEY });
}

const requestsOf = (p: Proxy, path: string | RegExp) => p.seen.filter((s) => (typeof path === 'string' ? s.path === path : path.test(s.path)));

describe.concurrent('dq-refdata sync without --timeout-ms (30 s per attempt)', () => {
  it(
    'waits 30 s for an answer: one given after 25 s is taken, one not given is dropped after 30 s and asked again; a body silent for 30 s is dropped and resumed',
    async () => {
      // Three syncs at once, each against its own proxy.
      const late = await proxy((path, nth) => (path === VERSION_TXT && nth === 1 ? { forward: DEFAULT_TIMEOUT_MS - 5_000 } : { forward: 0 }));
      const silent = await proxy((path, nth) => (path === VERSION_TXT && nth === 1 ? 'stall' : { forward: 0 }));
      const silentBody = await proxy((path, nth) => (DE_001.test(path) && nth === 1 ? 'stall-body' : { forward: 0 }));
      const started = Date.now();
      const [lateRun, silentRun, silentBodyRun] = await Promise.all([sync(late), sync(silent), sync(silentBody)]);

      // Answered 5 s before the default ran out: taken, not asked again.
      expect(lateRun.code, lateRun.stderr).toBe(0);
      expect(requestsOf(late, VERSION_TXT)).toEqual([{ path: VERSION_TXT }]);

      // Not answered: given up after about 30 s (not much earlier or later), then asked again.
      expect(silentRun.code, silentRun.stderr).toBe(0);
      const [first, second] = requestsOf(silent, VERSION_TXT);
      expect(first?.closedAfterMs).toBeGreaterThanOrEqual(DEFAULT_TIMEOUT_MS - 500);
      expect(first?.closedAfterMs).toBeLessThan(DEFAULT_TIMEOUT_MS + 4_000);
      expect(second).toEqual({ path: VERSION_TXT });

      // Half a body, then silence: given up about 30 s after the last chunk, then resumed after the half held.
      expect(silentBodyRun.code, silentBodyRun.stderr).toBe(0);
      const body = requestsOf(silentBody, DE_001);
      expect(body).toHaveLength(2);
      expect(body[0]?.closedAfterMs).toBeGreaterThanOrEqual(DEFAULT_TIMEOUT_MS - 500);
      expect(body[0]?.closedAfterMs).toBeLessThan(DEFAULT_TIMEOUT_MS + 4_000);
      expect(JSON.parse(silentBodyRun.stdout)).toMatchObject({ status: 'updated', resumed: [expect.stringMatching(/\/post\/DE\/DE_001\.zip$/)] });

      expect(Date.now() - started).toBeLessThan(DEFAULT_TIMEOUT_MS + 15_000);
    },
    DEFAULT_TIMEOUT_MS + 30_000,
  );

  it('with --timeout-ms 1000 and a server that never answers: each attempt is given up after about 1 s; after 6, exit 75 naming the URL and the limit', async () => {
    const p = await proxy((path) => (path === VERSION_TXT ? 'stall' : { forward: 0 }));
    const r = await sync(p, ['--timeout-ms', '1000']);
    expect(r.code).toBe(75);
    expect(r.stderr.trim()).toBe(
      `dq-refdata: Gave up after 6 attempts; try again later. Last failure: GET ${p.url}${VERSION_TXT}: nothing received for 1000 ms (UND_ERR_HEADERS_TIMEOUT)`,
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ command: 'sync', status: 'failed', exitCode: 75, code: 'retries-exhausted' });
    const attempts = requestsOf(p, VERSION_TXT);
    expect(attempts).toHaveLength(6);
    for (const a of attempts) {
      expect(a.closedAfterMs).toBeGreaterThanOrEqual(900);
      expect(a.closedAfterMs).toBeLessThan(3_000);
    }
  }, 60_000);
});
