/**
 * dq-pg read + write path: rows/s of `cleanse()` on a 1,000,000-row table with validation answered
 * instantly (a local server answering batch/sync at once, in its own process), beside a raw loop on
 * the same table in the same run: keyset read of 1000 rows + one guarded `UPDATE … FROM unnest(…)`
 * per page, nothing else. Target ratio ≥ 0.8. Both sides write every row (the answer upper-cases
 * the street). Each side gets a fresh copy of the same table; order alternates between runs.
 *
 * What the cleanser does on top of the raw loop is its job: engine mapping, dedup and cache, the
 * audit and results rows, the checkpoint and the range claims. The rows repeat 1000 distinct
 * addresses, so the engine makes ~1000 HTTP calls per run and answers the rest from its cache:
 * the benchmark measures the database path, not HTTP (engine-overhead.ts measures that).
 *
 * Two cleanser configurations are measured: the defaults (`DEFAULT_WORKERS` range workers on
 * connections of their own: while one waits for its page write, another validates) and
 * `--workers 1` (one page read, validated and written after another, nothing overlapping). Besides rows/s, CPU per row of this process (node, engine threads
 * included) and of the PostgreSQL server is recorded: a figure the machine's other load moves
 * less than wall time.
 *
 * Run: `node tools/bench/dist/pg-cleanse.js [rows=1000000] [runs=3]` (`npm run bench` uses 5 runs)
 */
import { availableParallelism, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createSilentLogger } from '@dq/core';
import { cleanse, DEFAULT_WORKERS } from '@dq/postgres-cleanser';
import { startBenchPostgres } from './pg-server.js';
import type { BenchPostgres } from './pg-server.js';
import { serveInstant, startInstantServer } from './instant-server.js';
import type { Address, Answer } from './instant-server.js';
import { median } from './stats.js';
import { writeResult } from './results.js';

const PAGE = 1000;
const DISTINCT = 1000;
const COLUMNS = ['street', 'house_number', 'postal_code', 'city', 'country'] as const;

/** Child mode's answer: class C, street upper-cased, customerAddressId echoed. */
function answer(a: Address): Answer {
  return {
    body: {
      customerAddressId: a['customerAddressId'],
      resultClass: 'C',
      results: [
        {
          addressType: 'delivery',
          country: a['country'],
          postalCode: a['postalCode'],
          locality: a['locality'],
          street: a['street']?.toUpperCase(),
          houseNumber: a['houseNumber'],
        },
      ],
    },
    requestId: 'bench',
  };
}

async function query(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A fresh copy of the source table, with its primary key, vacuumed and analysed. */
async function freshTable(url: string, name: string): Promise<void> {
  await query(
    url,
    `DROP TABLE IF EXISTS ${name}; DROP SCHEMA IF EXISTS dq_cleanse CASCADE;
    CREATE TABLE ${name} AS SELECT * FROM bench_src ORDER BY id; ALTER TABLE ${name} ADD PRIMARY KEY (id); CHECKPOINT`,
  );
  await query(url, `VACUUM ANALYZE ${name}`);
}

/** The reference: keyset read + guarded unnest write per page of 1000, autocommit per statement. */
async function rawLoop(url: string, table: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const cols = COLUMNS.join(', ');
  const read = `SELECT t.id::text AS k, ${cols} FROM ${table} AS t WHERE t.id > $1 ORDER BY t.id LIMIT ${PAGE}`;
  const arrays = ['$1::bigint[]', ...COLUMNS.flatMap((_, i) => [`$${2 + 2 * i}::text[]`, `$${3 + 2 * i}::text[]`])];
  const names = ['k', ...COLUMNS.flatMap((_, i) => [`o${i}`, `n${i}`])];
  const write = `UPDATE ${table} AS t SET ${COLUMNS.map((col, i) => `${col} = v.n${i}`).join(', ')}
    FROM unnest(${arrays.join(', ')}) AS v(${names.join(', ')})
    WHERE t.id = v.k AND ${COLUMNS.map((col, i) => `t.${col} IS NOT DISTINCT FROM v.o${i}`).join(' AND ')}`;
  let last = '0';
  let rows = 0;
  try {
    for (;;) {
      const page = await c.query<unknown[]>({ name: 'raw_read', text: read, values: [last], rowMode: 'array' });
      if (page.rows.length === 0) break;
      const keys = page.rows.map((r) => r[0] as string);
      const params: unknown[] = [keys];
      COLUMNS.forEach((col, i) => {
        const old = page.rows.map((r) => r[i + 1] as string | null);
        params.push(old, col === 'street' ? old.map((s) => s?.toUpperCase() ?? null) : old);
      });
      const res = await c.query({ name: 'raw_write', text: write, values: params });
      if (res.rowCount !== keys.length) throw new Error(`raw loop: ${res.rowCount} of ${keys.length} rows updated`);
      rows += keys.length;
      last = keys[keys.length - 1] ?? last;
    }
  } finally {
    await c.end();
  }
  return rows;
}

/** Where the last cleanser run's time went (overlapping: reads and validation run during writes). */
let lastTimings = { readMs: 0, validateMs: 0, writeMs: 0 };

async function cleanserRun(url: string, table: string, baseUrl: string, runId: string, workers: number): Promise<number> {
  const summary = await cleanse({
    db: url,
    table,
    key: 'id',
    batchSize: PAGE,
    runId,
    baseUrl,
    apiKey: 'bench-key',
    logger: createSilentLogger(),
    // 0: the defaults (DEFAULT_WORKERS range workers, no read-ahead); else that many workers.
    ...(workers > 0 ? { workers } : {}),
    map: { street: 'street', houseNumber: 'house_number', postalCode: 'postal_code', locality: 'city', country: 'country' },
    // No result store: every run calls every distinct input, as the raw side does (store-rerun measures the store).
    engine: { rateLimits: { batch: 0 }, store: 'off' },
  });
  if (summary.exitCode !== 0 || summary.written !== summary.rows) throw new Error(`cleanser: ${JSON.stringify(summary)}`);
  lastTimings = summary.timings;
  return summary.rows;
}

interface Measured {
  rows: number;
  rowsPerSecond: number;
  seconds: number;
  /** CPU of this process (main thread and engine threads) per row, µs. */
  nodeCpuUsPerRow: number;
  /** CPU of the PostgreSQL server's processes per row, µs. */
  pgCpuUsPerRow: number;
}

async function timed(db: BenchPostgres, fn: () => Promise<number>): Promise<Measured> {
  const pg0 = await db.cpuMs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const rows = await fn();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // Ended backends' CPU reaches the postmaster's account once they have exited.
  await sleep(500);
  const pgMs = (await db.cpuMs()) - pg0;
  return { rows, rowsPerSecond: rows / seconds, seconds, nodeCpuUsPerRow: (cpu.user + cpu.system) / rows, pgCpuUsPerRow: (pgMs * 1000) / rows };
}

/** The sides measured in each run, in the order of the first run (later runs rotate it). */
const SIDES = [
  { name: 'raw', workers: -1 },
  { name: 'dq-pg', workers: 0 },
  { name: 'dq-pg --workers 1', workers: 1 },
] as const;
type SideName = (typeof SIDES)[number]['name'];

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const runs = Math.max(1, Number(process.argv[3] ?? 3));
  const { url, child: server } = await startInstantServer(fileURLToPath(import.meta.url));
  const db = await startBenchPostgres();
  try {
    await query(
      db.url,
      `CREATE TABLE bench_src AS
      SELECT g::bigint AS id, 'hauptstraße ' || (g % ${DISTINCT}) AS street, (1 + (g % ${DISTINCT}) % 7)::text AS house_number,
             '10115'::text AS postal_code, 'Berlin'::text AS city, 'DE'::text AS country
        FROM generate_series(1, ${n}) g`,
    );
    const samples = new Map<SideName, Measured[]>(SIDES.map((side) => [side.name, []]));
    for (let run = 0; run < runs; run += 1) {
      const order = SIDES.map((_, i) => SIDES[(i + run) % SIDES.length] as (typeof SIDES)[number]);
      for (const side of order) {
        await freshTable(db.url, 'bench_run');
        const m = await timed(db, () =>
          side.workers < 0 ? rawLoop(db.url, 'bench_run') : cleanserRun(db.url, 'bench_run', url, `bench-${run}`, side.workers),
        );
        if (m.rows !== n) throw new Error(`${side.name}: ${m.rows} of ${n} rows`);
        samples.get(side.name)?.push(m);
        const t = lastTimings;
        const extra =
          side.workers < 0
            ? ''
            : `; read ${(t.readMs / 1000).toFixed(1)} s, engine ${(t.validateMs / 1000).toFixed(1)} s, write ${(t.writeMs / 1000).toFixed(1)} s${side.workers !== 1 ? ', summed over the workers' : ''}`;
        console.log(
          `run ${run + 1}/${runs} ${side.name}: ${Math.round(m.rowsPerSecond)} rows/s (${m.seconds.toFixed(1)} s; CPU per row: node ${m.nodeCpuUsPerRow.toFixed(1)} µs, postgres ${m.pgCpuUsPerRow.toFixed(1)} µs${extra})`,
        );
      }
    }
    const summary = (name: SideName) => {
      const ms = samples.get(name) ?? [];
      return {
        rowsPerSecond: Math.round(median(ms.map((m) => m.rowsPerSecond))),
        nodeCpuUsPerRow: Number(median(ms.map((m) => m.nodeCpuUsPerRow)).toFixed(1)),
        pgCpuUsPerRow: Number(median(ms.map((m) => m.pgCpuUsPerRow)).toFixed(1)),
        samples: ms.map((m) => Math.round(m.rowsPerSecond)),
      };
    };
    const raw = summary('raw');
    const dflt = summary('dq-pg');
    const one = summary('dq-pg --workers 1');
    const result = {
      benchmark: 'pg-cleanse',
      rows: n,
      pageRows: PAGE,
      distinctInputs: DISTINCT,
      runs,
      cpus: availableParallelism(),
      node: process.version,
      rawRowsPerSecond: raw.rowsPerSecond,
      // Default settings: DEFAULT_WORKERS range workers, each reading, validating and writing its pages in turn.
      defaultWorkers: DEFAULT_WORKERS,
      cleanserRowsPerSecond: dflt.rowsPerSecond,
      ratio: Number((dflt.rowsPerSecond / raw.rowsPerSecond).toFixed(3)),
      // One range worker (--workers 1): one page at a time, nothing overlaps.
      cleanserWorkers1RowsPerSecond: one.rowsPerSecond,
      ratioWorkers1: Number((one.rowsPerSecond / raw.rowsPerSecond).toFixed(3)),
      target: 0.8,
      cpuUsPerRow: {
        raw: { node: raw.nodeCpuUsPerRow, postgres: raw.pgCpuUsPerRow },
        cleanser: { node: dflt.nodeCpuUsPerRow, postgres: dflt.pgCpuUsPerRow },
        cleanserWorkers1: { node: one.nodeCpuUsPerRow, postgres: one.pgCpuUsPerRow },
      },
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      samples: { raw: raw.samples, cleanser: dflt.samples, cleanserWorkers1: one.samples },
      measuredAt: new Date().toISOString(),
    };
    console.log(`raw keyset + guarded unnest loop ${result.rawRowsPerSecond} rows/s (median of ${runs}) | load ${result.loadAverage.join(' ')}`);
    console.log(
      `dq-pg cleanse (defaults: ${DEFAULT_WORKERS} range workers) ${result.cleanserRowsPerSecond} rows/s | ratio ${result.ratio} (target ≥ ${result.target})`,
    );
    console.log(`dq-pg cleanse --workers 1 ${result.cleanserWorkers1RowsPerSecond} rows/s | ratio ${result.ratioWorkers1}`);
    await writeResult('pg-cleanse', result);
  } finally {
    server.kill();
    await db.stop();
  }
}

if (process.argv.includes('--serve')) serveInstant(answer);
else await main();
