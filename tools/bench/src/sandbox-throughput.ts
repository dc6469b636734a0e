/**
 * Sandbox throughput: validate requests per second that the sandbox answers with rate limits off,
 * against the 3,000/s target (so the sandbox never limits the connectors' benchmarks). The raw
 * reference, measured in the same run with the same load, is a bare node:http server that reads
 * the body and answers a fixed JSON result of the same size — the most any Node HTTP server does
 * on this machine. The sandbox and the reference each run in their own process (the CLI, and this
 * file forked with --raw-server); autocannon runs here. Median of RUNS runs.
 * Usage: node tools/bench/dist/sandbox-throughput.js [--runs 3] [--seconds 8] [--connections 32]
 */
import { fork, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateDirtyInputs } from '@dq/sandbox';
import { firstLine, stop } from './child.js';
import { middle } from './stats.js';

const TARGET = 3000; // validate requests per second
const KEY = 'bench-key-0000001';
const SELF = fileURLToPath(import.meta.url);
const require = createRequire(import.meta.url);

interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
type Cannon = (opts: Record<string, unknown>) => Promise<CannonResult>;
const autocannon = require('autocannon') as Cannon;

/** Reference server: reads the body, answers `body` as JSON. Prints its URL to stdout. */
async function rawServer(body: string): Promise<void> {
  const server = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-service-request-id': 'ref' });
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

const median = (xs: number[]): number => middle(xs, NaN);

async function load(url: string, requests: object[], seconds: number, connections: number): Promise<CannonResult> {
  return autocannon({ url: `${url}/location/v1/validate`, connections, duration: seconds, requests });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '3' }, seconds: { type: 'string', default: '8' }, connections: { type: 'string', default: '32' } },
  });
  const runs = Number(values.runs);
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);

  // A realistic mix: 200 generated dirty inputs of every class, cycled by each connection.
  const requests = generateDirtyInputs(200, { seed: 1 }).map((c) => ({
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify(c.input),
  }));

  const dir = await mkdtemp(join(tmpdir(), 'dq-bench-sandbox-'));
  const config = join(dir, 'accounts.json');
  const off = { validate: 0, batch: 0, 'start-session': 0, autocomplete: 0 };
  await writeFile(config, JSON.stringify({ accounts: [{ id: 'bench', apiKeys: [KEY], rateLimits: off }] }));
  const cli = join(dirname(require.resolve('@dq/sandbox')), 'cli.js');
  const sandbox = spawn(process.execPath, [cli, '--port', '0', '--config', config], { stdio: ['ignore', 'pipe', 'inherit'] });
  const sandboxUrl = await firstLine(sandbox);

  // The reference answers what the sandbox answers for the first input, byte for byte in size.
  const sample = await fetch(`${sandboxUrl}/location/v1/validate`, requests[0] as RequestInit);
  const raw = fork(SELF, ['--raw-server', await sample.text()], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const rawUrl = await firstLine(raw);

  const sandboxRps: number[] = [];
  const rawRps: number[] = [];
  const details: object[] = [];
  try {
    await load(sandboxUrl, requests, 2, connections); // warm-up (JIT, reference data indexes)
    await load(rawUrl, requests, 2, connections);
    for (let i = 0; i < runs; i++) {
      const s = await load(sandboxUrl, requests, seconds, connections);
      const r = await load(rawUrl, requests, seconds, connections);
      if (s.non2xx > 0 || s.errors > 0)
        throw new Error(`run ${i + 1}: the sandbox answered ${s.non2xx} non-2xx and ${s.errors} errors; the figure would be wrong`);
      sandboxRps.push(s.requests.average);
      rawRps.push(r.requests.average);
      details.push({
        run: i + 1,
        sandbox: { rps: s.requests.average, p50Ms: s.latency.p50, p99Ms: s.latency.p99 },
        raw: { rps: r.requests.average, p50Ms: r.latency.p50, p99Ms: r.latency.p99 },
      });
      process.stderr.write(`run ${i + 1}: sandbox ${Math.round(s.requests.average)} req/s, raw node:http ${Math.round(r.requests.average)} req/s\n`);
    }
  } finally {
    await Promise.all([stop(sandbox), stop(raw)]);
    await rm(dir, { recursive: true, force: true });
  }

  const result = {
    benchmark: 'sandbox-throughput',
    date: new Date().toISOString(),
    setup: {
      runs,
      seconds,
      connections,
      cpus: (await import('node:os')).cpus().length,
      node: process.version,
      mix: '200 generated dirty inputs, rate limits off',
    },
    sandboxRequestsPerSecond: Math.round(median(sandboxRps)),
    target: TARGET,
    ratioToTarget: Number((median(sandboxRps) / TARGET).toFixed(3)),
    rawNodeHttpRequestsPerSecond: Math.round(median(rawRps)),
    ratioToRaw: Number((median(sandboxRps) / median(rawRps)).toFixed(3)),
    runs: details,
  };
  process.stdout.write(
    `sandbox validate ${result.sandboxRequestsPerSecond} req/s | target ${TARGET} req/s | ratio ${result.ratioToTarget} (target ≥ 1) | ` +
      `raw node:http ${result.rawNodeHttpRequestsPerSecond} req/s, sandbox/raw ${result.ratioToRaw} (median of ${runs})\n`,
  );
  const resultsDir = join(dirname(SELF), '..', 'results');
  await mkdir(resultsDir, { recursive: true });
  await writeFile(join(resultsDir, 'sandbox-throughput.json'), `${JSON.stringify(result, null, 2)}\n`);
}

if (process.argv[2] === '--raw-server') await rawServer(process.argv[3] ?? '{}');
else await main();
