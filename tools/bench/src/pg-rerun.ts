/**
 * What the dq-pg rerun benchmarks share: the table of distinct addresses, half of them `Hauptstr. N`
 * (which `correctHauptstr` in instant-server.ts corrects), and one timed dq-pg run over it.
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { createSilentLogger } from '@dq/core';
import { cleanse } from '@dq/postgres-cleanser';
import type { CleanseOptions, CleanseSummary } from '@dq/postgres-cleanser';

/**
 * Creates table `bench` (primary key `id`) of `n` distinct addresses in Berlin 10115: even ids hold
 * `Hauptstr. <id>`, odd ids `Hauptstraße <id>`. `columns` is added to its select list, `after` runs
 * in the same statement.
 */
export async function createHauptstrTable(url: string, n: number, extra: { columns?: string; after?: string } = {}): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE TABLE bench AS
      SELECT g::bigint AS id, CASE WHEN g % 2 = 0 THEN 'Hauptstr. ' ELSE 'Hauptstraße ' END || g AS street, '1'::text AS house_number, '10115'::text AS postal_code, 'Berlin'::text AS city, 'DE'::text AS country${extra.columns === undefined ? '' : `, ${extra.columns}`}
        FROM generate_series(1, ${n}) g; ALTER TABLE bench ADD PRIMARY KEY (id)${extra.after === undefined ? '' : `; ${extra.after}`}`);
  } finally {
    await client.end();
  }
}

/**
 * One dq-pg run over table `bench` (batches of 1000, no rate limit, silent) with `extra` options
 * (`engine` merged into the defaults); throws unless it exits 0. Its summary and seconds.
 */
export async function timedCleanse(
  db: string,
  baseUrl: string,
  runId: string,
  extra: Pick<CleanseOptions, 'statusColumns' | 'engine'> = {},
): Promise<{ summary: CleanseSummary; seconds: number }> {
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
    ...(extra.statusColumns === undefined ? {} : { statusColumns: extra.statusColumns }),
    engine: { rateLimits: { batch: 0 }, ...extra.engine },
  });
  const seconds = (performance.now() - t0) / 1000;
  if (summary.exitCode !== 0) throw new Error(`dq-pg: ${JSON.stringify(summary)}`);
  return { summary, seconds };
}

/** The 1-minute load average, to two decimals. */
export const loadNow = (): number => Number((loadavg()[0] ?? 0).toFixed(2));
