/**
 * dq-pg all-hit rerun: a new run (new run id) over an unchanged table whose every answer is in the
 * result store (dq-pg's default: a table of its own database), ÷ the same run against an instant
 * server with no store (`--store off`), the fastest a run that calls can be. Target ratio ≥ 1.0.
 *
 * Every row is a distinct address (so the store, not the engine's in-run cache, answers), and
 * the server answers with the address as sent (class A): no row is changed, so the table stays
 * the same for every run. The server runs in its own process; the sides alternate order; figures
 * are medians with their spread (min–max).
 *
 * Run: `node tools/bench/dist/store-pg-rerun.js [rows=1000000] [runs=5]`
 */
import { fork } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createSilentLogger } from '@dq/core';
import { cleanse } from '@dq/postgres-cleanser';
import { startBenchPostgres } from './pg-server.js';

/** Child: answers every batch/sync at once with the address as sent, class A; counts calls. */
function serve(): void {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const a = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, string>;
      res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': `bench-${a['street']}` });
      res.end(
        JSON.stringify({
          customerAddressId: a['customerAddressId'],
          resultClass: 'A',
          results: [
            {
              addressType: 'delivery',
              country: a['country'],
              postalCode: a['postalCode'],
              locality: a['locality'],
              street: a['street'],
              houseNumber: a['houseNumber'],
            },
          ],
        }),
      );
    });
  });
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
}

async function run(
  db: string,
  baseUrl: string,
  runId: string,
  store: string | undefined,
): Promise<{ rowsPerSecond: number; apiCalls: number; written: number }> {
  const t0 = performance.now();
  const summary = await cleanse({
    db,
    table: 'bench',
    key: 'id',
    batchSize: 1000,
    runId,
    baseUrl,
    apiKey: 'bench-key',
    logger: createSilentLogger(),
    map: { street: 'street', houseNumber: 'house_number', postalCode: 'postal_code', locality: 'city', country: 'country' },
    engine: { rateLimits: { batch: 0 }, ...(store === undefined ? {} : { store }) },
  });
  if (summary.exitCode !== 0) throw new Error(`dq-pg: ${JSON.stringify(summary)}`);
  return { rowsPerSecond: summary.rows / ((performance.now() - t0) / 1000), apiCalls: summary.apiCalls, written: summary.written };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};
const spread = (xs: number[]): [number, number] => [Math.round(Math.min(...xs)), Math.round(Math.max(...xs))];

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const runs = Math.max(5, Number(process.argv[3] ?? 5));
  const server = fork(fileURLToPath(import.meta.url), ['--serve'], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve) => server.once('message', (m) => resolve(Number(m))));
  const baseUrl = `http://127.0.0.1:${port}`;
  const db = await startBenchPostgres();
  try {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query(`CREATE TABLE bench AS
      SELECT g::bigint AS id, 'Hauptstraße ' || g AS street, '1'::text AS house_number, '10115'::text AS postal_code, 'Berlin'::text AS city, 'DE'::text AS country
        FROM generate_series(1, ${n}) g; ALTER TABLE bench ADD PRIMARY KEY (id)`);
    await client.end();
    const fill = await run(db.url, baseUrl, 'fill', undefined);
    if (fill.apiCalls !== n) throw new Error(`the filling run made ${fill.apiCalls} calls for ${n} rows`);
    const hit: number[] = [];
    const none: number[] = [];
    for (let i = 0; i < runs; i += 1) {
      for (const side of i % 2 === 0 ? ['hit', 'none'] : ['none', 'hit']) {
        const r = await run(db.url, baseUrl, `${side}-${i}`, side === 'hit' ? undefined : 'off');
        if (side === 'hit' && (r.apiCalls !== 0 || r.written !== 0)) throw new Error(`the all-hit run made ${r.apiCalls} calls and ${r.written} writes`);
        (side === 'hit' ? hit : none).push(r.rowsPerSecond);
      }
      console.log(`run ${i + 1}/${runs}: all-hit ${Math.round(hit.at(-1)!)} rows/s, no store (instant server) ${Math.round(none.at(-1)!)} rows/s`);
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
      fillRowsPerSecond: Math.round(fill.rowsPerSecond),
      fillRatio: Number((fill.rowsPerSecond / median(none)).toFixed(3)),
      spread: { allHit: spread(hit), noStore: spread(none) },
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `dq-pg ${n} rows, new run over an unchanged table: all-hit ${result.allHitRowsPerSecond} rows/s | no store, instant server ${result.noStoreRowsPerSecond} rows/s | ratio ${result.ratio} (target ≥ 1.0) | filling run ${result.fillRowsPerSecond} rows/s | medians of ${runs}, load ${result.loadAverage.join(' ')}`,
    );
    const out = fileURLToPath(new URL('../results/', import.meta.url));
    await mkdir(out, { recursive: true });
    await writeFile(`${out}store-pg-rerun.json`, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    server.kill();
    await db.stop();
  }
}

if (process.argv.includes('--serve')) serve();
else await main();
