/**
 * Engine overhead: records/s through the engine (mapping, local validation, dedup keys, cache,
 * chunked piscina messaging, transport, zod parsing, policy) against an instant local server,
 * beside a raw undici loop making the same HTTP calls at the same concurrency. Target ratio ≥ 0.7.
 *
 * The server runs in a child process (this file with `--serve`) so it does not share an event loop
 * with either client. Inputs are distinct so dedup cannot flatter the engine.
 *
 * Run: `node tools/bench/dist/engine-overhead.js [records=20000] [runs=5]`
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { createEngine, createMemoryCache, createSilentLogger } from '@dq/core';

const PATH = '/location/v1/validate/batch/sync';
const CONCURRENCY = 32;
const THREADS = 2;

/** Child mode: answer every batch/sync at once with a fixed class-A body echoing customerAddressId. */
function serve(): void {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { customerAddressId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { customerAddressId?: string };
      const body = JSON.stringify({
        customerAddressId,
        resultClass: 'A',
        results: [{ addressType: 'delivery', country: 'DE', postalCode: '10117', locality: 'Berlin', street: 'Unter den Linden', houseNumber: '1' }],
      });
      res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': 'bench' });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
}

function records(n: number, run: number): Array<Record<string, string>> {
  return Array.from({ length: n }, (_, i) => ({
    street: `Street ${run}-${i}`,
    houseNumber: String(1 + (i % 200)),
    postalCode: '10117',
    locality: 'Berlin',
    country: 'DE',
  }));
}

async function startServer(): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve(Number(m)));
    child.once('error', reject);
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** The reference: a loop of `CONCURRENCY` undici requests with the engine's body shape, parsed as JSON. */
/** Throughput and client CPU (all threads of this process) per record of one measured run. */
interface Sample {
  recordsPerSecond: number;
  cpuMicrosPerRecord: number;
}

function sample(n: number, t0: number, cpu0: NodeJS.CpuUsage): Sample {
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { recordsPerSecond: n / seconds, cpuMicrosPerRecord: (cpu.user + cpu.system) / n };
}

async function rawRun(url: string, input: Array<Record<string, string>>): Promise<Sample> {
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1 });
  let next = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const lane = async (): Promise<void> => {
    while (next < input.length) {
      const i = next++;
      const res = await pool.request({
        path: PATH,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key' },
        body: JSON.stringify({ ...input[i], customerAddressId: String(i) }),
      });
      const body = (await res.body.json()) as { resultClass?: string };
      if (res.statusCode !== 200 || body.resultClass !== 'A') throw new Error(`raw loop: unexpected answer ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const measured = sample(input.length, t0, cpu0);
  await pool.close();
  return measured;
}

async function engineRun(
  url: string,
  input: Array<Record<string, string>>,
  warmup: Array<Record<string, string>>,
  threads = THREADS,
): Promise<Sample> {
  const engine = createEngine({
    mode: 'address',
    baseUrl: url,
    apiKey: 'bench-key',
    threads,
    concurrency: CONCURRENCY,
    rateLimits: { batch: 0 },
    cache: createMemoryCache({ maxEntries: input.length + warmup.length }),
    logger: createSilentLogger(),
  });
  try {
    await engine.process(warmup); // threads started, connections open: measure the steady state
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const results = await engine.process(input);
    const measured = sample(input.length, t0, cpu0);
    const accepted = results.filter((r) => r.status === 'accepted' && r.source === 'api').length;
    if (accepted !== input.length) throw new Error(`engine: ${accepted} of ${input.length} records accepted from a call`);
    return measured;
  } finally {
    await engine.close();
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 20_000);
  const runs = Math.max(3, Number(process.argv[3] ?? 5));
  const { url, child } = await startServer();
  try {
    await rawRun(url, records(2_000, -1)); // warm the server's JIT before either side is measured
    const engine: Sample[] = [];
    const oneThread: Sample[] = [];
    const raw: Sample[] = [];
    for (let run = 0; run < runs; run += 1) {
      // Alternate which side goes first so drift (thermal, GC) does not favour one.
      const order = run % 2 === 0 ? ['raw', 'engine', 'one'] : ['one', 'engine', 'raw'];
      for (const side of order) {
        if (side === 'raw') raw.push(await rawRun(url, records(n, run)));
        else if (side === 'engine') engine.push(await engineRun(url, records(n, run + 1000), records(500, run + 2000)));
        else oneThread.push(await engineRun(url, records(n, run + 3000), records(500, run + 4000), 1));
      }
      const [e, r] = [engine.at(-1), raw.at(-1)];
      console.log(
        `run ${run + 1}/${runs}: engine ${e?.recordsPerSecond.toFixed(0)} rec/s (${e?.cpuMicrosPerRecord.toFixed(0)} µs CPU/rec), ` +
          `raw ${r?.recordsPerSecond.toFixed(0)} rec/s (${r?.cpuMicrosPerRecord.toFixed(0)} µs CPU/rec)`,
      );
    }
    const result = {
      benchmark: 'engine-overhead',
      records: n,
      runs,
      concurrency: CONCURRENCY,
      threads: THREADS,
      cpus: availableParallelism(),
      node: process.version,
      engineRecordsPerSecond: Math.round(median(engine.map((s) => s.recordsPerSecond))),
      rawRecordsPerSecond: Math.round(median(raw.map((s) => s.recordsPerSecond))),
      ratio: Number((median(engine.map((s) => s.recordsPerSecond)) / median(raw.map((s) => s.recordsPerSecond))).toFixed(3)),
      target: 0.7,
      // The same engine on one worker thread (on 2 cores the server competes for CPU with every extra thread).
      oneThreadRecordsPerSecond: Math.round(median(oneThread.map((s) => s.recordsPerSecond))),
      oneThreadRatio: Number(
        (median(oneThread.map((s) => s.recordsPerSecond)) / median(raw.map((s) => s.recordsPerSecond))).toFixed(3),
      ),
      oneThreadCpuMicrosPerRecord: Math.round(median(oneThread.map((s) => s.cpuMicrosPerRecord))),
      // Client CPU per record (all threads): steadier than wall time when the machine is shared.
      engineCpuMicrosPerRecord: Math.round(median(engine.map((s) => s.cpuMicrosPerRecord))),
      rawCpuMicrosPerRecord: Math.round(median(raw.map((s) => s.cpuMicrosPerRecord))),
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      samples: {
        engine: engine.map((s) => Math.round(s.recordsPerSecond)),
        oneThread: oneThread.map((s) => Math.round(s.recordsPerSecond)),
        raw: raw.map((s) => Math.round(s.recordsPerSecond)),
      },
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `engine ${result.engineRecordsPerSecond} rec/s | raw undici loop ${result.rawRecordsPerSecond} rec/s | ` +
        `ratio ${result.ratio} (target ≥ ${result.target}, median of ${runs}) | ` +
        `CPU/rec engine ${result.engineCpuMicrosPerRecord} µs, raw ${result.rawCpuMicrosPerRecord} µs | load ${result.loadAverage.join(' ')}`,
    );
    console.log(
      `engine on 1 thread ${result.oneThreadRecordsPerSecond} rec/s | ratio ${result.oneThreadRatio} | CPU/rec ${result.oneThreadCpuMicrosPerRecord} µs`,
    );
    const dir = fileURLToPath(new URL('../results/', import.meta.url));
    await mkdir(dir, { recursive: true });
    await writeFile(`${dir}engine-overhead.json`, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    child.kill();
  }
}

if (process.argv.includes('--serve')) serve();
else await main();
