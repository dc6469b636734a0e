/**
 * dq-pg new run over an unchanged table, right after the run that cleaned it: a new run id, every
 * answer known (dq-pg's default store: its own database), ÷ the same run against an instant server
 * with no store (`--store off`), the fastest a run that calls can be. Target ratio ≥ 1.0.
 *
 * Every row is a distinct address (so the store, not the engine's in-run cache, answers). Half the
 * rows hold `Hauptstr. N`, which the server corrects to `Hauptstraße N` (class B); the other half
 * it answers as sent (class A). The first run (not part of the ratio) pays for every row and
 * corrects half of them; the measured runs start right after it, so the first of them is the
 * nightly case (the corrected rows hold what the first run wrote: their answers are reused, no
 * call, no write), and the table stays the same for every later run. The server runs in its own
 * process; the sides alternate order; figures are medians with their spread (min–max) and the
 * 1-minute load average at each run.
 *
 * Run: `node tools/bench/dist/store-pg-rerun.js [rows=1000000] [runs=5]` (at least 3 runs)
 */
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { correctHauptstr, serveInstant, startInstantServer } from './instant-server.js';
import { startBenchPostgres } from './pg-server.js';
import { median, spread } from './stats.js';
import { writeResult } from './results.js';
import { createHauptstrTable, loadNow, timedCleanse } from './pg-rerun.js';

async function run(
  db: string,
  baseUrl: string,
  runId: string,
  store: string | undefined,
): Promise<{ rowsPerSecond: number; apiCalls: number; written: number; callsSavedByStore: number; load: number }> {
  const { summary, seconds } = await timedCleanse(db, baseUrl, runId, store === undefined ? {} : { engine: { store } });
  return {
    rowsPerSecond: summary.rows / seconds,
    apiCalls: summary.apiCalls,
    written: summary.written,
    callsSavedByStore: summary.callsSavedByStore,
    load: loadNow(),
  };
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const runs = Math.max(3, Number(process.argv[3] ?? 5));
  const { url: baseUrl, child: server } = await startInstantServer(fileURLToPath(import.meta.url));
  const db = await startBenchPostgres();
  try {
    await createHauptstrTable(db.url, n);
    const fill = await run(db.url, baseUrl, 'fill', undefined);
    if (fill.apiCalls !== n || fill.written !== Math.floor(n / 2))
      throw new Error(`the first run made ${fill.apiCalls} calls and ${fill.written} writes for ${n} rows`);
    const hit: number[] = [];
    const none: number[] = [];
    const loads: number[] = [];
    for (let i = 0; i < runs; i += 1) {
      for (const side of i % 2 === 0 ? ['hit', 'none'] : ['none', 'hit']) {
        const r = await run(db.url, baseUrl, `${side}-${i}`, side === 'hit' ? undefined : 'off');
        if (side === 'hit' && (r.apiCalls !== 0 || r.written !== 0 || r.callsSavedByStore !== n))
          throw new Error(`the rerun made ${r.apiCalls} calls and ${r.written} writes, ${r.callsSavedByStore} answers reused`);
        if (side === 'none' && r.written !== 0) throw new Error(`the --store off run wrote ${r.written} rows`);
        (side === 'hit' ? hit : none).push(r.rowsPerSecond);
        loads.push(r.load);
      }
      console.log(
        `run ${i + 1}/${runs}: rerun ${Math.round(hit.at(-1)!)} rows/s, no store (instant server) ${Math.round(none.at(-1)!)} rows/s, load ${loads.join(' ')}`,
      );
    }
    const result = {
      benchmark: 'store-pg-rerun',
      rows: n,
      runs,
      cpus: availableParallelism(),
      node: process.version,
      allHitRowsPerSecond: Math.round(median(hit)),
      noStoreRowsPerSecond: Math.round(median(none)),
      ratio: Number((median(hit) / median(none)).toFixed(3)),
      target: 1.0,
      firstRerunRowsPerSecond: Math.round(hit[0] ?? 0),
      fillRowsPerSecond: Math.round(fill.rowsPerSecond),
      fillRatio: Number((fill.rowsPerSecond / median(none)).toFixed(3)),
      spread: { allHit: spread(hit), noStore: spread(none) },
      loadAtRuns: [Math.min(fill.load, ...loads), Math.max(fill.load, ...loads)],
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `dq-pg ${n} rows, new run right after the first over the unchanged table: ${result.allHitRowsPerSecond} rows/s (first rerun ${result.firstRerunRowsPerSecond}), 0 calls, 0 writes | no store, instant server ${result.noStoreRowsPerSecond} rows/s | ratio ${result.ratio} (target ≥ 1.0) | first run ${result.fillRowsPerSecond} rows/s | medians of ${runs}, load ${result.loadAtRuns.join('–')}`,
    );
    await writeResult('store-pg-rerun', result);
  } finally {
    server.kill();
    await db.stop();
  }
}

if (process.argv.includes('--serve')) serveInstant(correctHauptstr);
else await main();
