/**
 * dq-pg with `--status-columns`, a new run over an unchanged table right after the run that
 * cleaned it (the nightly case: every answer known, every status the same) ÷ the same rerun
 * without status columns, which writes nothing to the table anyway. A rerun that updates only the
 * rows it changes is as fast as one that has no status columns to write: target ratio ≥ 0.9. The
 * table has a statement-level trigger that counts the rows UPDATEd (printed per side: 0 expected).
 *
 * Every row is a distinct address; half hold `Hauptstr. N`, which the server corrects (class B),
 * the others it answers as sent (class A). The first run (not part of the ratio) pays for every
 * row and writes every row's status. The server runs in its own process; the sides alternate
 * order; figures are medians with their spread (min–max) and the 1-minute load average at each run.
 *
 * Run: `node tools/bench/dist/pg-status-rerun.js [rows=200000] [runs=5]` (at least 3 runs)
 */
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { correctHauptstr, serveInstant, startInstantServer } from './instant-server.js';
import { startBenchPostgres } from './pg-server.js';
import { median, spread } from './stats.js';
import { writeResult } from './results.js';
import { createHauptstrTable, loadNow, timedCleanse } from './pg-rerun.js';

const STATUS = { status: 'dq_status', class: 'dq_class', requestId: 'dq_request_id', checkedAt: 'dq_checked_at' } as const;

async function updatedRows(db: string): Promise<number> {
  const client = new pg.Client({ connectionString: db });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>('SELECT n FROM bench_updates')).rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

async function run(
  db: string,
  baseUrl: string,
  runId: string,
  withStatus: boolean,
): Promise<{ rowsPerSecond: number; apiCalls: number; updated: number; load: number }> {
  const before = await updatedRows(db);
  const { summary, seconds } = await timedCleanse(db, baseUrl, runId, withStatus ? { statusColumns: STATUS } : {});
  return {
    rowsPerSecond: summary.rows / seconds,
    apiCalls: summary.apiCalls,
    updated: (await updatedRows(db)) - before,
    load: loadNow(),
  };
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 200_000);
  const runs = Math.max(3, Number(process.argv[3] ?? 5));
  const { url: baseUrl, child: server } = await startInstantServer(fileURLToPath(import.meta.url));
  const db = await startBenchPostgres();
  try {
    await createHauptstrTable(db.url, n, {
      columns: 'NULL::text AS dq_status, NULL::text AS dq_class, NULL::text AS dq_request_id, NULL::timestamptz AS dq_checked_at',
      after: `CREATE TABLE bench_updates (n bigint NOT NULL); INSERT INTO bench_updates VALUES (0);
      CREATE FUNCTION bench_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE bench_updates SET n = n + (SELECT count(*) FROM changed); RETURN NULL; END $$;
      CREATE TRIGGER bench_count AFTER UPDATE ON bench REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION bench_count()`,
    });
    const fill = await run(db.url, baseUrl, 'fill', true);
    if (fill.apiCalls !== n || fill.updated !== n) throw new Error(`the first run made ${fill.apiCalls} calls and updated ${fill.updated} rows for ${n}`);
    const status: number[] = [];
    const plain: number[] = [];
    const updated: number[] = [];
    const loads: number[] = [];
    for (let i = 0; i < runs; i += 1) {
      for (const side of i % 2 === 0 ? ['status', 'plain'] : ['plain', 'status']) {
        const r = await run(db.url, baseUrl, `${side}-${i}`, side === 'status');
        if (r.apiCalls !== 0) throw new Error(`the ${side} rerun made ${r.apiCalls} calls`);
        if (side === 'status') updated.push(r.updated);
        else if (r.updated !== 0) throw new Error(`the rerun without status columns updated ${r.updated} rows`);
        (side === 'status' ? status : plain).push(r.rowsPerSecond);
        loads.push(r.load);
      }
      console.log(
        `run ${i + 1}/${runs}: --status-columns ${Math.round(status.at(-1)!)} rows/s (${updated.at(-1)} rows updated), without ${Math.round(plain.at(-1)!)} rows/s, load ${loads.join(' ')}`,
      );
    }
    const result = {
      benchmark: 'pg-status-rerun',
      rows: n,
      runs,
      cpus: availableParallelism(),
      node: process.version,
      statusRowsPerSecond: Math.round(median(status)),
      plainRowsPerSecond: Math.round(median(plain)),
      ratio: Number((median(status) / median(plain)).toFixed(3)),
      target: 0.9,
      rowsUpdatedPerRerun: updated,
      fillRowsPerSecond: Math.round(fill.rowsPerSecond),
      spread: { status: spread(status), plain: spread(plain) },
      loadAtRuns: [Math.min(fill.load, ...loads), Math.max(fill.load, ...loads)],
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `dq-pg ${n} rows, new run over the unchanged table with --status-columns: ${result.statusRowsPerSecond} rows/s, rows updated ${updated.join(', ')} | without status columns ${result.plainRowsPerSecond} rows/s | ratio ${result.ratio} (target ≥ 0.9) | first run ${result.fillRowsPerSecond} rows/s | medians of ${runs}, load ${result.loadAtRuns.join('–')}`,
    );
    await writeResult('pg-status-rerun', result);
  } finally {
    server.kill();
    await db.stop();
  }
}

if (process.argv.includes('--serve')) serveInstant(correctHauptstr);
else await main();
