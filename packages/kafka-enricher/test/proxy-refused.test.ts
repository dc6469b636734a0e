import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliArgs, committedOffsets, killIfRunning, produce, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';

// A network where the platform is reached only through an HTTP proxy (HTTP_PROXY), and the proxy
// refuses the credentials in its URL (HTTP 407): a person must fix the proxy setting; neither the
// key nor the platform is at fault (README, "Exit codes": 3).

const kafka = useKafka();
const sandbox = useSandbox();
const SECRET = 'pr0xy-s3cret';
let proxy: { url: string; refused: number; close(): Promise<void> };
let run: Running | undefined;

beforeAll(async () => {
  let refused = 0;
  const sockets = new Set<Socket>();
  const server = createServer((_req, res) => (refused++, res.writeHead(407, { 'proxy-authenticate': 'Basic realm="dq"' }).end()));
  server.on('connection', (s: Socket) => (sockets.add(s), s.once('close', () => sockets.delete(s))));
  server.on('connect', (_req, client: Socket) => {
    refused++;
    client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="dq"\r\n\r\n');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  proxy = {
    url: `http://dq:${SECRET}@127.0.0.1:${port}`,
    get refused() {
      return refused;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
});
afterAll(async () => {
  killIfRunning(run);
  await proxy?.close();
});

it('a proxy that refuses its credentials stops dq-kafka with exit 3, the log saying to fix the proxy setting (not the key), nothing committed, no password shown', async () => {
  const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  await produce(kafka.brokers, names.input, [
    { key: 'k1', value: JSON.stringify({ id: 1, address: { street: 'Lindenweg', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' } }) },
  ]);
  // Only the proxy given here (both spellings): one set for the test runner itself must not leak in.
  const only = { HTTP_PROXY: proxy.url, http_proxy: proxy.url, HTTPS_PROXY: '', https_proxy: '', NO_PROXY: '', no_proxy: '' };
  run = spawnEnricher(cliArgs(kafka.brokers, names), { ...sandbox.env(), ...only });
  const exited = await run.exited;
  const stderr = run.stderr();
  expect(exited.code, stderr.slice(-2000)).toBe(3);
  expect(proxy.refused).toBeGreaterThan(0);
  expect(stderr).toMatch(/^dq-kafka: proxy-refused: POST \S+: the proxy http:\/\/dq:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+ refused the connection \(HTTP 407/m);
  expect(stderr).toContain('"msg":"run stopped: the proxy refused the connection; fix the proxy setting and restart"');
  expect(stderr).not.toMatch(/fix the key|run stopped by the platform/);
  expect(stderr).not.toContain(SECRET);
  expect(stderr).not.toMatch(/\n\s+at /);
  expect([...(await committedOffsets(kafka.brokers, names.group, names.input)).values()].every((o) => o < 0n)).toBe(true);
}, 90_000);
