/**
 * All-hit rerun: dq-csv over a file whose every answer is in the result store (a nightly rerun of
 * unchanged data), ÷ the same run against an instant server with no store (the fastest a run that
 * calls can be). Target ratio ≥ 1.0. Also the run that fills the store (all-miss, embedded store)
 * ÷ the no-store run: the store's cost on a first run, end to end.
 *
 * Each measured run is a child process (this file with a mode flag); the server is one too. The
 * sides alternate order; figures are medians with their spread (min–max), and each run's CPU time
 * per row (user + system, the dq-csv process only) beside its wall rate.
 *
 * The no-store reference runs over the first `referenceRows` rows of the same file (default
 * 100,000): it calls for every row, so on this shared machine a run over 1,000,000 takes tens of
 * minutes; a streaming run's rate does not grow with the file (memory levels off, each batch is
 * written and checkpointed the same way), and its fixed start-up weighs more on the shorter run,
 * which lowers the reference, if anything, by well under 1 %.
 *
 * Run: `node tools/bench/dist/store-rerun.js [rows=1000000] [runs=5] [referenceRows=100000]`
 */
import { fork } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSilentLogger } from '@dq/core';
import { processFile } from '@dq/csv-processor';
import { echoClassA, serveInstant, startInstantServer } from './instant-server.js';
import { median, spread } from './stats.js';
import { writeResult } from './results.js';

const CONCURRENCY = 32;
const self = fileURLToPath(import.meta.url);

/** Child: one dq-csv run; reports its seconds and API calls. */
async function child(url: string, input: string, output: string, store: string): Promise<void> {
  const t0 = performance.now();
  const summary = await processFile({
    input,
    output,
    baseUrl: url,
    apiKey: 'bench-key',
    country: 'DE',
    logger: createSilentLogger(),
    engine: { concurrency: CONCURRENCY, rateLimits: { batch: 0 }, store },
  });
  if (summary.exitCode !== 0 || summary.totals.byStatus.accepted !== summary.totals.rows)
    throw new Error(`dq-csv run: ${JSON.stringify(summary.error ?? summary.totals.byStatus)}`);
  const cpu = process.cpuUsage();
  process.send?.({ seconds: (performance.now() - t0) / 1000, apiCalls: summary.totals.apiCalls, cpuMicros: cpu.user + cpu.system });
  process.disconnect?.();
}

interface Run {
  rowsPerSecond: number;
  apiCalls: number;
  /** CPU time of the dq-csv process (start-up included) per row, µs. */
  cpuMicrosPerRow: number;
}

function run(url: string, input: string, output: string, store: string, rows: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const c = fork(self, ['--run', url, input, output, store], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    c.once('message', (m) => {
      const { seconds, apiCalls, cpuMicros } = m as { seconds: number; apiCalls: number; cpuMicros: number };
      resolve({ rowsPerSecond: rows / seconds, apiCalls, cpuMicrosPerRow: cpuMicros / rows });
    });
    c.once('exit', (code) => code !== 0 && reject(new Error(`dq-csv run exited ${code}`)));
  });
}

async function writeInput(path: string, rows: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const out = createWriteStream(path);
  out.write('id,street,houseNumber,postalCode,locality\n');
  for (let i = 0; i < rows; i++) {
    if (!out.write(`${i},Straße ${Math.floor(i / 200)},${1 + (i % 200)},10117,Berlin\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
}

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 1_000_000);
  const runs = Math.max(3, Number(process.argv[3] ?? 5));
  const referenceRows = Math.min(rows, Number(process.argv[4] ?? 100_000));
  const loadAtStart = loadavg().map((l) => Number(l.toFixed(2)));
  const { url, child: server } = await startInstantServer(self);
  const dir = await mkdtemp(join(tmpdir(), 'dq-store-rerun-'));
  try {
    const input = join(dir, 'in.csv');
    await writeInput(input, rows);
    // The reference's input: the first referenceRows rows of the same file.
    const referenceInput = referenceRows === rows ? input : join(dir, 'reference', 'in.csv');
    if (referenceInput !== input) await writeInput(referenceInput, referenceRows);
    const store = join(dir, 'store');
    const fill = await run(url, input, join(dir, 'fill.csv'), store, rows);
    if (fill.apiCalls !== rows) throw new Error(`the fill run made ${fill.apiCalls} calls for ${rows} rows`);
    console.log(`fill run (${rows} rows, all-miss, embedded store): ${Math.round(fill.rowsPerSecond)} rows/s, ${fill.cpuMicrosPerRow.toFixed(1)} µs CPU/row`);
    const hit: number[] = [];
    const none: number[] = [];
    const hitCpu: number[] = [];
    const noneCpu: number[] = [];
    for (let i = 0; i < runs; i += 1) {
      for (const side of i % 2 === 0 ? ['hit', 'none'] : ['none', 'hit']) {
        const r =
          side === 'hit'
            ? await run(url, input, join(dir, `hit-${i}.csv`), store, rows)
            : await run(url, referenceInput, join(dir, `none-${i}.csv`), 'off', referenceRows);
        if (side === 'hit' && r.apiCalls !== 0) throw new Error(`the all-hit run made ${r.apiCalls} calls`);
        (side === 'hit' ? hit : none).push(r.rowsPerSecond);
        (side === 'hit' ? hitCpu : noneCpu).push(r.cpuMicrosPerRow);
        await rm(join(dir, `${side}-${i}.csv`), { force: true });
      }
      console.log(
        `run ${i + 1}/${runs}: all-hit ${Math.round(hit.at(-1)!)} rows/s (${hitCpu.at(-1)!.toFixed(1)} µs CPU/row), no store (instant server) ${Math.round(none.at(-1)!)} rows/s (${noneCpu.at(-1)!.toFixed(1)} µs CPU/row) | load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
    const result = {
      benchmark: 'store-rerun',
      rows,
      referenceRows,
      runs,
      concurrency: CONCURRENCY,
      cpus: availableParallelism(),
      node: process.version,
      allHitRowsPerSecond: Math.round(median(hit)),
      noStoreRowsPerSecond: Math.round(median(none)),
      ratio: Number((median(hit) / median(none)).toFixed(3)),
      target: 1.0,
      // The first run, filling the store (one run, all-miss) ÷ the no-store median.
      fillRowsPerSecond: Math.round(fill.rowsPerSecond),
      fillRatio: Number((fill.rowsPerSecond / median(none)).toFixed(3)),
      fillCpuMicrosPerRow: Number(fill.cpuMicrosPerRow.toFixed(1)),
      // CPU time per row of the dq-csv process: medians, and the ratio (reference ÷ all-hit: > 1 is less CPU).
      cpuMicrosPerRow: { allHit: Number(median(hitCpu).toFixed(1)), noStore: Number(median(noneCpu).toFixed(1)) },
      cpuRatio: Number((median(noneCpu) / median(hitCpu)).toFixed(3)),
      spread: { allHit: spread(hit), noStore: spread(none) },
      loadAverageAtStart: loadAtStart,
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `dq-csv ${rows} rows: all-hit rerun ${result.allHitRowsPerSecond} rows/s | no store, instant server ${result.noStoreRowsPerSecond} rows/s | ratio ${result.ratio} (target ≥ 1.0) | filling run ${result.fillRowsPerSecond} rows/s (ratio ${result.fillRatio}) | CPU µs/row: all-hit ${result.cpuMicrosPerRow.allHit}, no store ${result.cpuMicrosPerRow.noStore}, fill ${result.fillCpuMicrosPerRow} | medians of ${runs}, load ${result.loadAverage.join(' ')}`,
    );
    await writeResult('store-rerun', result);
  } finally {
    server.kill();
    await rm(dir, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
if (mode === '--serve') serveInstant((a, call) => echoClassA(a, `bench-${call}`), { reportCalls: true });
else if (mode === '--run') await child(process.argv[3]!, process.argv[4]!, process.argv[5]!, process.argv[6]!);
else await main();
