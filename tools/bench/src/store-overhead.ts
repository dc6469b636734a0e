/**
 * Result store overhead: records/s of the engine on all-miss input (every input new, so every
 * answer is called and then written to the store) against an instant local server, with the
 * embedded store (LMDB) ÷ the same engine without a store. Target ratio ≥ 0.8. The same with the
 * Postgres store (an embedded PostgreSQL on this machine) is reported beside it.
 *
 * Fairness: the server runs in a child process; the sides use the same engine settings
 * (concurrency 32, default threads, no rate limit), distinct inputs every run, and alternate their
 * order run by run; figures are medians with their spread (min–max). Beside the rates, the CPU time
 * per record of this process (the engine, its store writes and LMDB; not the server, nor the
 * Postgres server) tells the store's cost apart from the machine's load.
 *
 * The floor, measured in the same runs: LMDB alone (lmdb-js opened as the store opens it) doing
 * the store's work for as many new answers, with nothing of ours around it: a lookup that misses,
 * then the answer written, 500 to a transaction (one engine batch: the fewest commits a store that
 * commits before a batch returns can make), keys precomputed; and again 32 to a transaction (the
 * most the engine lets wait for a commit: a kill loses at most those). The engine's CPU per record
 * without a store ÷ (that + LMDB's alone) is the best ratio any store on LMDB could reach on this
 * machine.
 *
 * Run: `node tools/bench/dist/store-overhead.js [records=20000] [runs=5] [pg=1]`
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import type { Database } from 'lmdb';
import { createEngine, createSilentLogger, defaultThreads } from '@dq/core';
import type { CachedResult } from '@dq/core';
import { openStore, storeKey } from '@dq/core/store';
import type { ResultStore } from '@dq/core/store';
import { startPostgres } from '@dq/test-support/pg';
import { serveInstant, startInstantServer } from './instant-server.js';
import type { Address, Answer } from './instant-server.js';
import { median, spread } from './stats.js';
import { writeResult } from './results.js';

const CONCURRENCY = 32;

/** Child's answer: a class-A body echoing customerAddressId, street and house number (10117 Berlin). */
function answer({ customerAddressId, street, houseNumber }: Address): Answer {
  return {
    body: {
      customerAddressId,
      resultClass: 'A',
      results: [{ addressType: 'delivery', country: 'DE', postalCode: '10117', locality: 'Berlin', street, houseNumber }],
    },
    requestId: `bench-${street}`,
  };
}

function records(n: number, run: string): Array<Record<string, string>> {
  return Array.from({ length: n }, (_, i) => ({
    street: `Street ${run}-${i}`,
    houseNumber: String(1 + (i % 200)),
    postalCode: '10117',
    locality: 'Berlin',
    country: 'DE',
  }));
}

/** Answers LMDB alone writes to a transaction: one engine batch, … */
const BARE_BATCH = 500;
/**
 * … or the most a store that commits each answer before its batch returns can gather: the engine
 * holds its calls back while `concurrency` answers wait for their commit.
 */
const BARE_BATCH_HELD = CONCURRENCY;

/**
 * CPU µs per record of LMDB alone doing the store's work for `n` new answers shaped like `answer`:
 * a lookup that misses, then the write, `perCommit` to a transaction; keys made beforehand.
 */
function lmdbAlone(db: Database, answer: CachedResult, n: number, run: string, perCommit: number): number {
  const keys = Array.from({ length: n }, (_, i) => storeKey(`bare-${run}-${i}`));
  const entries = keys.map((_, i) => ({ t: Date.now(), r: { ...answer, requestId: `bench-bare-${run}-${i}` } }));
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i += perCommit) {
    const end = Math.min(n, i + perCommit);
    for (let j = i; j < end; j++) if (db.get(keys[j]!) !== undefined) throw new Error('LMDB alone: a new key was found');
    db.transactionSync(() => {
      for (let j = i; j < end; j++) db.putSync(keys[j]!, entries[j]);
    });
  }
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / n;
}

/**
 * The least a store on LMDB can do inside the engine: lookups and writes straight to lmdb-js (opened
 * as the store opens it), the engine's request key as LMDB's key, the answers of one event-loop
 * turn in one transaction; none of the store's own work (the key's digest, the age check, the room
 * a full disk needs, the check time). Not a store a run could use (keys over 511 bytes fail, a full
 * disk crashes the process): the engine with it is the best any LMDB store reaches in the engine.
 */
function bareLmdbStore(db: Database): ResultStore {
  let queued: Array<[string, unknown]> = [];
  let writing: Promise<void> | undefined;
  const fail = (): never => {
    throw new Error('not a store of the bench');
  };
  return {
    location: 'bare',
    get: (key) => db.get(key) as CachedResult | undefined,
    async getMany(keys) {
      const found = new Map<string, CachedResult>();
      for (const key of keys) {
        const value = db.get(key) as { r: CachedResult } | undefined;
        if (value !== undefined) found.set(key, value.r);
      }
      return found;
    },
    set(key, value) {
      queued.push([key, { t: 0, r: value }]);
      writing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        const batch = queued;
        queued = [];
        writing = undefined;
        db.transactionSync(() => {
          for (const [k, entry] of batch) db.putSync(k, entry);
        });
      });
      return writing;
    },
    info: fail,
    prune: fail,
    clear: fail,
    close: async () => {
      await writing;
    },
  };
}

/** Records/s and CPU µs per record of one engine over `n` new inputs (batches of 500, as the connectors send them), and one of its answers. */
async function measure(url: string, store: ResultStore | undefined, n: number, run: string): Promise<{ rate: number; cpu: number; answer: CachedResult }> {
  const engine = createEngine({
    mode: 'address',
    baseUrl: url,
    apiKey: 'bench-key',
    concurrency: CONCURRENCY,
    rateLimits: { batch: 0 },
    logger: createSilentLogger(),
    resultStore: store,
  });
  try {
    const [first] = await engine.process(records(500, `${run}-warm`));
    const { source: _source, ...answer } = first!;
    const input = records(n, run);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i += 500) await engine.process(input.slice(i, i + 500));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (engine.report().apiCalls !== n + 500) throw new Error(`expected ${n + 500} calls, made ${engine.report().apiCalls}`);
    return { rate: n / seconds, cpu: (cpu.user + cpu.system) / n, answer };
  } finally {
    await engine.close();
  }
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 20_000);
  const runs = Math.max(5, Number(process.argv[3] ?? 5));
  const withPg = (process.argv[4] ?? '1') !== '0';
  const loadAtStart = loadavg().map((l) => Number(l.toFixed(2)));
  const { url, child } = await startInstantServer(fileURLToPath(import.meta.url));
  const dir = await mkdtemp(join(tmpdir(), 'dq-bench-store-'));
  const pg = withPg ? await startPostgres() : undefined;
  try {
    const sides: Record<string, number[]> = { none: [], lmdb: [], bare: [], pg: [] };
    const cpu: Record<string, number[]> = { none: [], lmdb: [], bare: [], pg: [] };
    const bare = open<unknown, string>({
      path: join(dir, 'alone', 'results.mdb'),
      compression: false,
      noSync: true,
      sharedStructuresKey: Symbol.for('structures'),
    });
    const bareInEngine = open<unknown, string>({
      path: join(dir, 'bare', 'results.mdb'),
      compression: false,
      noSync: true,
      sharedStructuresKey: Symbol.for('structures'),
    });
    const alone: number[] = [];
    const ceilings: number[] = [];
    const aloneHeld: number[] = [];
    const ceilingsHeld: number[] = [];
    for (let run = 0; run < runs; run += 1) {
      const order = run % 2 === 0 ? ['none', 'lmdb', 'bare', 'pg'] : ['pg', 'bare', 'lmdb', 'none'];
      for (const side of order) {
        if (side === 'pg' && !pg) continue;
        const store =
          side === 'none' ? undefined : side === 'bare' ? bareLmdbStore(bareInEngine) : await openStore(side === 'lmdb' ? join(dir, 'store') : pg!.url);
        const measured = await measure(url, store, n, `${run}-${side}`);
        sides[side]!.push(measured.rate);
        cpu[side]!.push(measured.cpu);
        if (side === 'none') {
          alone.push(lmdbAlone(bare, measured.answer, n, String(run), BARE_BATCH));
          ceilings.push(measured.cpu / (measured.cpu + alone.at(-1)!));
          aloneHeld.push(lmdbAlone(bare, measured.answer, n, `${run}-held`, BARE_BATCH_HELD));
          ceilingsHeld.push(measured.cpu / (measured.cpu + aloneHeld.at(-1)!));
        }
      }
      const shown = (side: string): string => `${side} ${Math.round(sides[side]!.at(-1)!)} rec/s (${cpu[side]!.at(-1)!.toFixed(1)} µs CPU/rec)`;
      console.log(
        `run ${run + 1}/${runs}: ${shown('none')}, ${shown('lmdb')}, ${shown('bare')}${pg ? `, ${shown('pg')}` : ''}, LMDB alone ${alone.at(-1)!.toFixed(1)} µs CPU/rec (${aloneHeld.at(-1)!.toFixed(1)} at ${BARE_BATCH_HELD} a commit) | load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
    await bare.close();
    await bareInEngine.close();
    const none = median(sides['none']!);
    const result = {
      benchmark: 'store-overhead',
      records: n,
      runs,
      concurrency: CONCURRENCY,
      threads: defaultThreads(),
      cpus: availableParallelism(),
      node: process.version,
      noStoreRecordsPerSecond: Math.round(none),
      lmdbRecordsPerSecond: Math.round(median(sides['lmdb']!)),
      ratio: Number((median(sides['lmdb']!) / none).toFixed(3)),
      target: 0.8,
      // The engine with the least an LMDB store can do (bareLmdbStore) ÷ without a store: the best ratio in the engine.
      bareRecordsPerSecond: Math.round(median(sides['bare']!)),
      bareRatio: Number((median(sides['bare']!) / none).toFixed(3)),
      ...(pg ? { pgRecordsPerSecond: Math.round(median(sides['pg']!)), pgRatio: Number((median(sides['pg']!) / none).toFixed(3)) } : {}),
      spread: { none: spread(sides['none']!), lmdb: spread(sides['lmdb']!), bare: spread(sides['bare']!), ...(pg ? { pg: spread(sides['pg']!) } : {}) },
      // CPU time of this process per record (medians): the store's own cost, less bent by the load than the rates.
      cpuMicrosPerRecord: {
        none: Number(median(cpu['none']!).toFixed(1)),
        lmdb: Number(median(cpu['lmdb']!).toFixed(1)),
        bare: Number(median(cpu['bare']!).toFixed(1)),
        ...(pg ? { pg: Number(median(cpu['pg']!).toFixed(1)) } : {}),
      },
      cpuRatio: Number((median(cpu['none']!) / median(cpu['lmdb']!)).toFixed(3)),
      bareCpuRatio: Number((median(cpu['none']!) / median(cpu['bare']!)).toFixed(3)),
      // LMDB alone doing the store's work (no engine, no code of ours), and the best CPU ratio a
      // store on LMDB could reach: the engine's CPU without a store ÷ (that + LMDB's alone), per run.
      lmdbAloneCpuMicrosPerRecord: Number(median(alone).toFixed(1)),
      lmdbAloneSpread: [Number(Math.min(...alone).toFixed(1)), Number(Math.max(...alone).toFixed(1))],
      ceilingRatio: Number(median(ceilings).toFixed(3)),
      ceilingSpread: [Number(Math.min(...ceilings).toFixed(3)), Number(Math.max(...ceilings).toFixed(3))],
      // The same with LMDB alone committing 32 answers at a time (the most the engine lets wait).
      lmdbAloneHeldCpuMicrosPerRecord: Number(median(aloneHeld).toFixed(1)),
      heldCommitSize: BARE_BATCH_HELD,
      ceilingRatioHeld: Number(median(ceilingsHeld).toFixed(3)),
      ceilingHeldSpread: [Number(Math.min(...ceilingsHeld).toFixed(3)), Number(Math.max(...ceilingsHeld).toFixed(3))],
      ...(pg ? { pgCpuRatio: Number((median(cpu['none']!) / median(cpu['pg']!)).toFixed(3)) } : {}),
      loadAverageAtStart: loadAtStart,
      loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `all-miss, instant server: no store ${result.noStoreRecordsPerSecond} rec/s | LMDB store ${result.lmdbRecordsPerSecond} rec/s, ratio ${result.ratio} (target ≥ 0.8)` +
        (pg ? ` | Postgres store ${result.pgRecordsPerSecond} rec/s, ratio ${result.pgRatio}` : '') +
        ` | the least an LMDB store can do, in the engine: ${result.bareRecordsPerSecond} rec/s, ratio ${result.bareRatio}` +
        ` | CPU µs/record: none ${result.cpuMicrosPerRecord.none}, LMDB ${result.cpuMicrosPerRecord.lmdb} (ratio ${result.cpuRatio}), bare ${result.cpuMicrosPerRecord.bare} (ratio ${result.bareCpuRatio})` +
        (pg ? `, Postgres ${result.cpuMicrosPerRecord.pg} (ratio ${result.pgCpuRatio})` : '') +
        ` | LMDB alone ${result.lmdbAloneCpuMicrosPerRecord} µs CPU/rec: the best ratio a store on LMDB could reach ${result.ceilingRatio} (runs ${result.ceilingSpread.join('–')})` +
        `; committing ${BARE_BATCH_HELD} at a time ${result.lmdbAloneHeldCpuMicrosPerRecord} µs, best ratio ${result.ceilingRatioHeld} (runs ${result.ceilingHeldSpread.join('–')})` +
        ` | medians of ${runs}, load ${result.loadAverage.join(' ')}`,
    );
    await writeResult('store-overhead', result);
  } finally {
    child.kill();
    await pg?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--serve')) serveInstant(answer);
else await main();
