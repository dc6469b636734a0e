import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DownloadClient } from '@dq/core/download';
import { makeSampleCsv } from '@dq/sandbox';
import { sampleArgs } from '@dq/test-support/csv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv, useSandbox } from '@dq/test-support/use';

// Networks where the platform is reached only through an HTTP proxy name it as curl and most tools
// read it: HTTPS_PROXY / HTTP_PROXY (credentials in the URL), NO_PROXY for hosts reached directly.
// The proxy here is a real one over TCP: CONNECT tunnels (and absolute-form requests), Basic auth.

const CSV_CLI = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const SECRET = 'pr0xy-s3cret';
const sandbox = useSandbox();

interface Proxy {
  url: string;
  /** host:port of every tunnel or request it passed on. */
  passed: string[];
  refused: number;
  close(): Promise<void>;
}

async function startProxy(user: string, password: string): Promise<Proxy> {
  const passed: string[] = [];
  let refused = 0;
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const allowed = (req: IncomingMessage): boolean => (req.headers['proxy-authorization'] === expected ? true : (refused++, false));
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    if (!allowed(req)) return void res.writeHead(407, { 'proxy-authenticate': 'Basic realm="dq"' }).end();
    const target = new URL(req.url!);
    passed.push(target.host);
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (s: Socket) => (sockets.add(s), s.once('close', () => sockets.delete(s))));
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    if (!allowed(req)) return void client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="dq"\r\n\r\n');
    passed.push(req.url!);
    const [host, port] = req.url!.split(':');
    const upstream = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${user}:${password}@127.0.0.1:${port}`,
    passed,
    get refused() {
      return refused;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let dir: string;
let proxy: Proxy;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dq-proxy-'));
  proxy = await startProxy('dq', SECRET);
});
afterAll(async () => {
  await proxy.close();
  await rm(dir, { recursive: true, force: true });
});

/** dq-csv over the sample file with `env` (the sandbox's URL and key included); no store, so every row is a call. */
async function dqCsv(name: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; output: string }> {
  const input = join(dir, `${name}.csv`);
  const output = join(dir, `${name}.out.csv`);
  await writeFile(input, makeSampleCsv(20, 5));
  const args = [CSV_CLI, ...sampleArgs(input, output, '--store', 'off')];
  // Only the variables given: a proxy set for the test runner itself must not leak in.
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(https?|no|all)_proxy$/i.test(k))) as Record<string, string>;
  return new Promise((resolve) => {
    execFile(process.execPath, args, { env: { ...clean, ...sandboxEnv(sandbox), ...env } }, (error, _stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      void readFile(output, 'utf8')
        .catch(() => '')
        .then((out) => resolve({ code, stderr, output: out }));
    });
  });
}

describe('the platform behind an HTTP proxy', () => {
  it('dq-csv reaches the platform through HTTP_PROXY with the credentials in its URL, which never appear in its output', async () => {
    const before = proxy.passed.length;
    const run = await dqCsv('through', { HTTP_PROXY: proxy.url });
    expect(run.code, run.stderr).toBe(0);
    expect(run.output.trim().split('\n')).toHaveLength(21);
    const host = new URL(sandbox.url).host;
    expect(proxy.passed.slice(before)).toContain(host);
    expect(proxy.passed.slice(before).every((h) => h === host)).toBe(true);
    expect(run.stderr).not.toContain(SECRET);
  }, 60_000);

  it('dq-csv goes direct to a host NO_PROXY names', async () => {
    const before = proxy.passed.length;
    const run = await dqCsv('direct', { HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' });
    expect(run.code, run.stderr).toBe(0);
    expect(proxy.passed.length).toBe(before);
  }, 60_000);

  it('a proxy that refuses the credentials stops dq-csv with exit 3 (a person must act, as for a refused key), naming the proxy without its password', async () => {
    const wrong = proxy.url.replace(SECRET, 'wrong-pass');
    const run = await dqCsv('refused', { HTTP_PROXY: wrong });
    expect(run.code, run.stderr).toBe(3);
    // The password is masked where the proxy is named (and the log's redactor masks any URL password).
    expect(run.stderr).toMatch(
      new RegExp(
        `^dq-csv: proxy-refused: POST ${sandbox.url}/\\S+: the proxy http://dq:(\\*\\*\\*|\\[redacted\\])@127\\.0\\.0\\.1:${new URL(proxy.url).port} refused the connection \\(HTTP 407 Proxy Authentication Required\\): check the user and password in its URL \\(HTTPS_PROXY / HTTP_PROXY\\); .*fix the proxy setting and rerun with --resume$`,
        'm',
      ),
    );
    expect(run.stderr).not.toContain('wrong-pass');
  }, 60_000);

  it('downloads go through the proxy too', async () => {
    const before = proxy.passed.length;
    const saved = process.env['HTTP_PROXY'];
    process.env['HTTP_PROXY'] = proxy.url;
    const client = new DownloadClient({ downloadUrl: sandbox.url, apiKey: sandboxEnv(sandbox)['DQ_API_KEY']! });
    try {
      const version = await client.fetchVersion();
      expect(version).toBeTruthy();
    } finally {
      await client.close();
      if (saved === undefined) delete process.env['HTTP_PROXY'];
      else process.env['HTTP_PROXY'] = saved;
    }
    expect(proxy.passed.slice(before)).toContain(new URL(sandbox.url).host);
  }, 60_000);
});
