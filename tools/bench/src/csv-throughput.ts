/**
 * dq-csv throughput and memory: rows/s of `processFile` on a CSV of distinct addresses against an
 * instant local batch/sync endpoint, beside a raw pipeline doing the same work at the same
 * concurrency (fast-csv parse → the same HTTP calls with undici → fast-csv format → file).
 * Target ratio ≥ 0.7. Also the peak RSS of dq-csv at 1/10 of the rows and at all of them: the
 * issue asks for peak RSS at 1,000,000 rows ≤ 1.25 × at 100,000.
 *
 * The server and every measured pipeline run in child processes (this file with a mode flag), so
 * each side has its own event loop and its own peak RSS.
 *
 * Run: `node tools/bench/dist/csv-throughput.js [rows=1000000] [runs=3]`
 */
import { fork } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFile } from '@fast-csv/parse';
import { format } from '@fast-csv/format';
import { Pool } from 'undici';
import { createSilentLogger } from '@dq/core';
import { processFile } from '@dq/csv-processor';
import { echoClassA, serveInstant, startInstantServer } from './instant-server.js';
import { middle } from './stats.js';
import { writeResult } from './results.js';

const PATH = '/location/v1/validate/batch/sync';
const CONCURRENCY = 32;
const self = fileURLToPath(import.meta.url);

/** Child: the raw pipeline, order preserved with a window of CONCURRENCY calls in flight. */
async function rawPipeline(url: string, input: string, output: string): Promise<void> {
  const pool = new Pool(url, { connections: CONCURRENCY });
  const out = format({ headers: true, delimiter: ',' });
  const done = new Promise((resolve, reject) =>
    out
      .pipe(createWriteStream(output))
      .on('finish', () => resolve(undefined))
      .on('error', reject),
  );
  const window: Promise<Record<string, string>>[] = [];
  let id = 0;
  const call = async (row: Record<string, string>): Promise<Record<string, string>> => {
    const res = await pool.request({
      path: PATH,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key' },
      body: JSON.stringify({
        street: row['street'],
        houseNumber: row['houseNumber'],
        postalCode: row['postalCode'],
        locality: row['locality'],
        country: 'DE',
        customerAddressId: String(id++),
      }),
    });
    const body = (await res.body.json()) as { resultClass: string; results: Record<string, string>[] };
    return { ...row, dq_status: 'accepted', dq_result_class: body.resultClass, dq_street: body.results[0]?.['street'] ?? '' };
  };
  for await (const row of parseFile<Record<string, string>, Record<string, string>>(input, { headers: true })) {
    window.push(call(row));
    if (window.length >= CONCURRENCY) out.write(await window.shift()!);
  }
  for (const pending of window) out.write(await pending);
  out.end();
  await done;
  await pool.close();
}

/** Child: dq-csv itself, through its library entry point (the CLI is a thin wrapper). */
async function dqPipeline(url: string, input: string, output: string): Promise<void> {
  const summary = await processFile({
    input,
    output,
    baseUrl: url,
    apiKey: 'bench-key',
    country: 'DE',
    logger: createSilentLogger(),
    // No result store: every row is a call, as in the raw pipeline (store-rerun measures the store).
    engine: { concurrency: CONCURRENCY, rateLimits: { batch: 0 }, store: 'off' },
  });
  if (summary.exitCode !== 0 || summary.totals.byStatus.accepted !== summary.totals.rows)
    throw new Error(`dq-csv run: ${JSON.stringify(summary.error ?? summary.totals.byStatus)}`);
}

/** Runs one pipeline in a child; returns rows/s and the child's peak RSS. */
function measure(mode: 'raw' | 'dq', url: string, input: string, output: string, rows: number): Promise<{ rowsPerSecond: number; peakRssMb: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(self, [`--${mode}`, url, input, output], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m) => {
      const { seconds, maxRssKb } = m as { seconds: number; maxRssKb: number };
      resolve({ rowsPerSecond: rows / seconds, peakRssMb: maxRssKb / 1024 });
    });
    child.once('exit', (code) => code !== 0 && reject(new Error(`${mode} pipeline exited ${code}`)));
  });
}

async function child(mode: string, url: string, input: string, output: string): Promise<void> {
  const t0 = performance.now();
  await (mode === '--raw' ? rawPipeline(url, input, output) : dqPipeline(url, input, output));
  process.send?.({ seconds: (performance.now() - t0) / 1000, maxRssKb: process.resourceUsage().maxRSS });
  process.disconnect?.();
}

async function writeInput(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('id,street,houseNumber,postalCode,locality\n');
  for (let i = 0; i < rows; i++) {
    if (!out.write(`${i},Straße ${Math.floor(i / 200)},${1 + (i % 200)},10117,Berlin\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
}

const median = (xs: number[]): number => middle(xs, 0);

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 1_000_000);
  const runs = Math.max(1, Number(process.argv[3] ?? 3));
  const dir = await mkdtemp(join(tmpdir(), 'dq-csv-bench-'));
  const { url, child: server } = await startInstantServer(self);
  try {
    const big = join(dir, 'big.csv');
    const small = join(dir, 'small.csv');
    await writeInput(big, rows);
    await writeInput(small, Math.round(rows / 10));
    const raw: number[] = [];
    const dq: number[] = [];
    let bigRss = 0;
    for (let run = 0; run < runs; run++) {
      const r = await measure('raw', url, big, join(dir, `raw-${run}.csv`), rows);
      const d = await measure('dq', url, big, join(dir, `dq-${run}.csv`), rows);
      raw.push(r.rowsPerSecond);
      dq.push(d.rowsPerSecond);
      bigRss = Math.max(bigRss, d.peakRssMb);
      console.log(
        `run ${run + 1}/${runs}: dq-csv ${d.rowsPerSecond.toFixed(0)} rows/s (peak RSS ${d.peakRssMb.toFixed(0)} MB), raw ${r.rowsPerSecond.toFixed(0)} rows/s`,
      );
      await rm(join(dir, `raw-${run}.csv`), { force: true });
      await rm(join(dir, `dq-${run}.csv`), { force: true });
    }
    const smallRun = await measure('dq', url, small, join(dir, 'dq-small.csv'), Math.round(rows / 10));
    const result = {
      benchmark: 'csv-throughput',
      rows,
      runs,
      concurrency: CONCURRENCY,
      cpus: availableParallelism(),
      node: process.version,
      dqCsvRowsPerSecond: Math.round(median(dq)),
      rawRowsPerSecond: Math.round(median(raw)),
      ratio: Number((median(dq) / median(raw)).toFixed(3)),
      target: 0.7,
      peakRssMb: { [`${Math.round(rows / 10)}`]: Math.round(smallRun.peakRssMb), [`${rows}`]: Math.round(bigRss) },
      rssRatio: Number((bigRss / smallRun.peakRssMb).toFixed(3)),
      rssTarget: 1.25,
      samples: { dq: dq.map(Math.round), raw: raw.map(Math.round) },
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `dq-csv ${result.dqCsvRowsPerSecond} rows/s | raw fast-csv→undici→fast-csv ${result.rawRowsPerSecond} rows/s | ratio ${result.ratio} (target ≥ 0.7, median of ${runs})`,
    );
    console.log(`peak RSS ${JSON.stringify(result.peakRssMb)} MB | ratio ${result.rssRatio} (target ≤ 1.25)`);
    await writeResult('csv-throughput', result);
  } finally {
    server.kill();
    await rm(dir, { recursive: true, force: true });
  }
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === '--serve') serveInstant((a) => echoClassA(a, 'bench'));
else if (mode === '--raw' || mode === '--dq') await child(mode, rest[0]!, rest[1]!, rest[2]!);
else await main();
