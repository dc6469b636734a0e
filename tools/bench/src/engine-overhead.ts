/**
 * Engine overhead: records/s through the engine (mapping, local validation, dedup keys, cache,
 * chunked piscina messaging, transport, zod parsing, policy) against an instant local server,
 * beside a raw undici loop making the same HTTP calls at the same concurrency. Target ratio ≥ 0.7.
 *
 * Fairness: the server runs in a child process (this file with `--serve`) so it shares an event loop
 * with neither client; both sides send the same requests (endpoint, headers, body bytes) over the
 * same number of keep-alive connections at the same concurrency, each with its connections opened
 * by a warm-up before the clock starts; inputs are distinct so dedup cannot flatter the engine;
 * the sides alternate order run by run and the figures are medians. The engine runs with its default
 * worker threads (`defaultThreads()`: none, calls on the main thread, on a machine of one or two cores),
 * and once more with the other choice (one worker thread there) for comparison.
 *
 * Run: `node tools/bench/dist/engine-overhead.js [records=20000] [runs=5]`
 */
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { createEngine, createSilentLogger, defaultThreads } from '@dq/core';
import type { Engine } from '@dq/core';
import { fixedClassA, serveInstant, startInstantServer } from './instant-server.js';
import { median } from './stats.js';
import { writeResult } from './results.js';

const PATH = '/location/v1/validate/batch/sync';
const CONCURRENCY = 32;
/** Records each side sends before it is measured. */
const WARMUP = 5_000;
/** Largest chunk the engine hands a worker (`MAX_CHUNK`); its `customerAddressId`s are positions in it. */
const ENGINE_CHUNK = 64;
/** Headers the engine's transport sends with a JSON body and the API key. */
const HEADERS = {
  accept: 'application/json, application/problem+json',
  'content-type': 'application/json',
  authorization: 'Bearer bench-key',
};

function records(n: number, run: number): Array<Record<string, string>> {
  return Array.from({ length: n }, (_, i) => ({
    street: `Street ${run}-${i}`,
    houseNumber: String(1 + (i % 200)),
    postalCode: '10117',
    locality: 'Berlin',
    country: 'DE',
  }));
}

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

/**
 * The reference: `CONCURRENCY` lanes of undici requests on one keep-alive pool, the same bytes the
 * engine sends (headers, body, a `customerAddressId` that is the position in a chunk), the answer
 * parsed as JSON and checked.
 */
async function rawSend(pool: Pool, list: Array<Record<string, string>>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < list.length) {
      const i = next++;
      const res = await pool.request({
        path: PATH,
        method: 'POST',
        headers: HEADERS,
        body: JSON.stringify({ ...list[i], customerAddressId: String(i % ENGINE_CHUNK) }),
      });
      const body = (await res.body.json()) as { resultClass?: string };
      if (res.statusCode !== 200 || body.resultClass !== 'A') throw new Error(`raw loop: unexpected answer ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
}

async function rawRun(pool: Pool, input: Array<Record<string, string>>): Promise<Sample> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await rawSend(pool, input);
  return sample(input.length, t0, cpu0);
}

/** An engine as a connector holds it: default cache, threads started and warmed, connections open. */
async function openEngine(url: string, threads: number, warmup: Array<Record<string, string>>): Promise<Engine> {
  const engine = createEngine({
    mode: 'address',
    baseUrl: url,
    apiKey: 'bench-key',
    threads,
    concurrency: CONCURRENCY,
    rateLimits: { batch: 0 },
    logger: createSilentLogger(),
  });
  await engine.process(warmup);
  return engine;
}

async function engineRun(engine: Engine, input: Array<Record<string, string>>): Promise<Sample> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const results = await engine.process(input);
  const measured = sample(input.length, t0, cpu0);
  const accepted = results.filter((r) => r.status === 'accepted' && r.source === 'api').length;
  if (accepted !== input.length) throw new Error(`engine: ${accepted} of ${input.length} records accepted from a call`);
  return measured;
}

const rate = (xs: Sample[]): number => median(xs.map((s) => s.recordsPerSecond));
const cpu = (xs: Sample[]): number => median(xs.map((s) => s.cpuMicrosPerRecord));

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 20_000);
  const runs = Math.max(5, Number(process.argv[3] ?? 5));
  const threads = defaultThreads();
  // The other pool size worth knowing about: one worker thread where the default is none, else none.
  const altThreads = threads === 0 ? 1 : 0;
  const { url, child } = await startInstantServer(fileURLToPath(import.meta.url));
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1 });
  const engines: Engine[] = [];
  try {
    // Steady state on every side: JIT warm in the server, the raw loop and the engines' threads.
    await rawSend(pool, records(WARMUP, -1));
    const main = await openEngine(url, threads, records(WARMUP, -2));
    const other = await openEngine(url, altThreads, records(WARMUP, -3));
    engines.push(main, other);
    const engine: Sample[] = [];
    const alt: Sample[] = [];
    const raw: Sample[] = [];
    for (let run = 0; run < runs; run += 1) {
      // Alternate which side goes first so drift (load from other processes, GC) does not favour one.
      const order = run % 2 === 0 ? ['raw', 'engine', 'alt'] : ['alt', 'engine', 'raw'];
      for (const side of order) {
        if (side === 'raw') raw.push(await rawRun(pool, records(n, run)));
        else if (side === 'engine') engine.push(await engineRun(main, records(n, run + 1000)));
        else alt.push(await engineRun(other, records(n, run + 2000)));
      }
      const [e, r] = [engine.at(-1) as Sample, raw.at(-1) as Sample];
      console.log(
        `run ${run + 1}/${runs}: engine ${e.recordsPerSecond.toFixed(0)} rec/s (${e.cpuMicrosPerRecord.toFixed(0)} µs CPU/rec), ` +
          `raw ${r.recordsPerSecond.toFixed(0)} rec/s (${r.cpuMicrosPerRecord.toFixed(0)} µs CPU/rec), ratio ${(e.recordsPerSecond / r.recordsPerSecond).toFixed(2)}`,
      );
    }
    const result = {
      benchmark: 'engine-overhead',
      records: n,
      runs,
      concurrency: CONCURRENCY,
      threads,
      cpus: availableParallelism(),
      node: process.version,
      engineRecordsPerSecond: Math.round(rate(engine)),
      rawRecordsPerSecond: Math.round(rate(raw)),
      ratio: Number((rate(engine) / rate(raw)).toFixed(3)),
      target: 0.7,
      // Client CPU per record (all threads of the process): steadier than wall time on a shared machine.
      engineCpuMicrosPerRecord: Math.round(cpu(engine)),
      rawCpuMicrosPerRecord: Math.round(cpu(raw)),
      cpuRatio: Number((cpu(raw) / cpu(engine)).toFixed(3)),
      // The same engine with the other pool size, to check the default.
      altThreads,
      altRecordsPerSecond: Math.round(rate(alt)),
      altRatio: Number((rate(alt) / rate(raw)).toFixed(3)),
      altCpuMicrosPerRecord: Math.round(cpu(alt)),
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      samples: {
        engine: engine.map((s) => Math.round(s.recordsPerSecond)),
        alt: alt.map((s) => Math.round(s.recordsPerSecond)),
        raw: raw.map((s) => Math.round(s.recordsPerSecond)),
      },
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `engine (${threads} thread${threads === 1 ? '' : 's'}) ${result.engineRecordsPerSecond} rec/s | raw undici loop ${result.rawRecordsPerSecond} rec/s | ` +
        `ratio ${result.ratio} (target ≥ ${result.target}, median of ${runs}) | ` +
        `CPU/rec engine ${result.engineCpuMicrosPerRecord} µs, raw ${result.rawCpuMicrosPerRecord} µs | load ${result.loadAverage.join(' ')}`,
    );
    console.log(
      `engine on ${altThreads} thread${altThreads === 1 ? '' : 's'} ${result.altRecordsPerSecond} rec/s | ratio ${result.altRatio} | CPU/rec ${result.altCpuMicrosPerRecord} µs`,
    );
    await writeResult('engine-overhead', result);
  } finally {
    await Promise.all(engines.map((e) => e.close()));
    await pool.close();
    child.kill();
  }
}

if (process.argv.includes('--serve')) serveInstant(fixedClassA);
else await main();
