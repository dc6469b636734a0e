/**
 * Why the embedded result store is LMDB: puts and gets per second on the same keys and values
 * (keys: SHA-256 digests as the store uses; values: a stored address answer) with lmdb-js ÷ the
 * alternative that installs here without network, LevelDB (classic-level). better-sqlite3 downloads
 * its binary at install time (no network here) and node:sqlite needs Node 22.
 *
 * Puts go in batches of 500 (one engine batch of answers, one transaction / write batch), gets
 * one key at a time in random order, as the engine asks. Medians of the runs with their spread.
 *
 * Run: `node tools/bench/dist/store-choice.js [keys=1000000] [runs=5]`
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { open } from 'lmdb';
import { median, spread } from './stats.js';
import { writeResult } from './results.js';

const BATCH = 500;

const keyOf = (i: number): string => createHash('sha256').update(`scope\u0001street=hauptstr. ${i}`).digest('base64url');
const valueOf = (i: number) => ({
  t: 1_763_900_000_000 + i,
  r: {
    status: 'accepted',
    resultClass: 'A',
    requestId: `req-${i}`,
    checkedAt: '2026-11-24T00:00:00.000Z',
    address: { addressType: 'delivery', country: 'DE', postalCode: '10117', locality: 'Berlin', street: 'Hauptstraße', houseNumber: String(i) },
  },
});

interface Side {
  put(batch: Array<[string, unknown]>): Promise<void>;
  get(key: string): unknown;
  close(): Promise<void>;
}

async function lmdbSide(dir: string): Promise<Side> {
  // As the store opens it (lmdb-store.ts).
  const db = open({ path: join(dir, 'results.mdb'), compression: false, noSync: true, sharedStructuresKey: Symbol.for('structures') });
  return {
    async put(batch) {
      await Promise.all(batch.map(([k, v]) => db.put(k, v)));
    },
    get: (key) => db.get(key),
    close: () => db.close(),
  };
}

async function levelSide(dir: string): Promise<Side> {
  const db = new ClassicLevel<string, unknown>(join(dir, 'level'), { valueEncoding: 'json' });
  await db.open();
  return {
    put: (batch) => db.batch(batch.map(([key, value]) => ({ type: 'put' as const, key, value }))),
    get: (key) => db.get(key),
    close: () => db.close(),
  };
}

async function measure(make: (dir: string) => Promise<Side>, keys: string[]): Promise<{ puts: number; gets: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-store-choice-'));
  try {
    const side = await make(dir);
    let t0 = performance.now();
    for (let i = 0; i < keys.length; i += BATCH) {
      const batch: Array<[string, unknown]> = [];
      for (let j = i; j < Math.min(i + BATCH, keys.length); j++) batch.push([keys[j]!, valueOf(j)]);
      await side.put(batch);
    }
    const puts = keys.length / ((performance.now() - t0) / 1000);
    const order = keys.map((_, i) => (i * 7_919) % keys.length);
    t0 = performance.now();
    let found = 0;
    for (const i of order) if ((await side.get(keys[i]!)) !== undefined) found += 1;
    const gets = keys.length / ((performance.now() - t0) / 1000);
    if (found !== keys.length) throw new Error(`found ${found} of ${keys.length}`);
    await side.close();
    return { puts, gets };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const runs = Math.max(5, Number(process.argv[3] ?? 5));
  const keys = Array.from({ length: n }, (_, i) => keyOf(i));
  const s = { lmdbPut: [] as number[], lmdbGet: [] as number[], levelPut: [] as number[], levelGet: [] as number[] };
  for (let run = 0; run < runs; run += 1) {
    for (const side of run % 2 === 0 ? ['lmdb', 'level'] : ['level', 'lmdb']) {
      const r = await measure(side === 'lmdb' ? lmdbSide : levelSide, keys);
      (side === 'lmdb' ? s.lmdbPut : s.levelPut).push(r.puts);
      (side === 'lmdb' ? s.lmdbGet : s.levelGet).push(r.gets);
    }
    console.log(
      `run ${run + 1}/${runs}: lmdb put ${Math.round(s.lmdbPut.at(-1)!)}/s get ${Math.round(s.lmdbGet.at(-1)!)}/s | leveldb put ${Math.round(s.levelPut.at(-1)!)}/s get ${Math.round(s.levelGet.at(-1)!)}/s`,
    );
  }
  const result = {
    benchmark: 'store-choice',
    keys: n,
    runs,
    cpus: availableParallelism(),
    node: process.version,
    lmdbPutsPerSecond: Math.round(median(s.lmdbPut)),
    lmdbGetsPerSecond: Math.round(median(s.lmdbGet)),
    leveldbPutsPerSecond: Math.round(median(s.levelPut)),
    leveldbGetsPerSecond: Math.round(median(s.levelGet)),
    putRatio: Number((median(s.lmdbPut) / median(s.levelPut)).toFixed(3)),
    getRatio: Number((median(s.lmdbGet) / median(s.levelGet)).toFixed(3)),
    spread: { lmdbPut: spread(s.lmdbPut), lmdbGet: spread(s.lmdbGet), leveldbPut: spread(s.levelPut), leveldbGet: spread(s.levelGet) },
    loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
    measuredAt: new Date().toISOString(),
  };
  console.log(
    `${n} keys: LMDB put ${result.lmdbPutsPerSecond}/s, get ${result.lmdbGetsPerSecond}/s | LevelDB put ${result.leveldbPutsPerSecond}/s, get ${result.leveldbGetsPerSecond}/s | ratio put ${result.putRatio}, get ${result.getRatio} | medians of ${runs}`,
  );
  await writeResult('store-choice', result);
}

await main();
