/**
 * dq-csv under the platform's rate limit: the sandbox enforces batch/sync at exactly 100 requests in
 * any sliding second (the platform's limit; the sandbox's default, with no slack) and answers 429
 * above it; dq-csv runs with its default client-side limit, which keeps its own margin. Reported: achieved calls/s ÷ 100 (target ≥ 0.97) and the
 * number of 429s (target 0). Calls are counted by the sandbox; time is the run's wall time
 * (engine start-up and the final commit included).
 *
 * Each run starts a fresh (cold) sandbox. The sandbox runs in a child process, as the platform runs on its own machine: in the same
 * process its clock would read arrival times late whenever dq-csv's main thread is busy (a batch
 * being written, a garbage collection), which bunches requests that arrived evenly. The same run
 * is also measured with the sandbox in-process (`inProcess` in the JSON) to show that effect.
 * `steadyRatio` leaves out start-up and shutdown: answered calls from the first to the last one as
 * the sandbox saw them ((n − 1) ÷ their time span ÷ 100), i.e. the pacing alone.
 *
 * Run: `node tools/bench/dist/csv-rate.js [rows=2000] [runs=3]`
 */
import { fork } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSilentLogger } from '@dq/core';
import { processFile } from '@dq/csv-processor';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { middle } from './stats.js';
import { writeResult } from './results.js';

const LIMIT = 100; // batch/sync requests in any second, the platform's limit
const self = fileURLToPath(import.meta.url);

const BATCH_PATH = '/location/v1/validate/batch/sync';

/** Counts of the sandbox's batch endpoint, and when its first and last 200 went out (ms). */
interface BatchCounts {
  ok: number;
  tooMany: number;
  firstOkMs: number;
  lastOkMs: number;
  /** When each 429 went out, in ms after the first 200. */
  tooManyAtMs: number[];
}

/** Times of the batch 200s answered by this process's HTTP servers. */
const answered = { first: 0, last: 0, tooManyAt: [] as number[] };
subscribe('http.server.response.finish', (message) => {
  const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
  if (!request.url?.startsWith(BATCH_PATH)) return;
  const now = performance.now();
  if (response.statusCode === 429) answered.tooManyAt.push(Math.round(now - answered.first));
  if (response.statusCode !== 200) return;
  if (answered.first === 0) answered.first = now;
  answered.last = now;
});

const countsOf = (sandbox: Sandbox): BatchCounts => {
  const batch = sandbox.stats().requests['batch'];
  const counts = {
    ok: batch?.byStatus['200'] ?? 0,
    tooMany: batch?.byStatus['429'] ?? 0,
    firstOkMs: answered.first,
    lastOkMs: answered.last,
    tooManyAtMs: answered.tooManyAt,
  };
  answered.first = 0;
  answered.tooManyAt = [];
  return counts;
};

/** Child: a fresh sandbox with the default account (strict limits enforced); answers 'counts' messages. */
async function serve(): Promise<void> {
  const sandbox = await startSandbox({ port: 0 });
  process.on('message', (m) => {
    if (m === 'counts') process.send?.(countsOf(sandbox));
    else if (m === 'close') void sandbox.close().then(() => process.disconnect?.());
  });
  process.send?.(sandbox.url);
}

/** A sandbox in a child process: its URL, its counts, and a way to stop it. */
async function remoteSandbox(): Promise<{ url: string; counts(): Promise<BatchCounts>; close(): Promise<void> }> {
  const child = fork(self, ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const url = await new Promise<string>((resolve) => child.once('message', (m) => resolve(String(m))));
  return {
    url,
    counts: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m as BatchCounts));
        child.send('counts');
      }),
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.send('close');
      }),
  };
}

/** One run of dq-csv against a fresh sandbox; calls/s as the sandbox counted them. */
async function runOnce(input: string, output: string, inProcess: boolean): Promise<BatchCounts & { seconds: number; exitCode: number }> {
  const local = inProcess ? await startSandbox({ port: 0 }) : undefined;
  const remote = inProcess ? undefined : await remoteSandbox();
  try {
    const baseUrl = local?.url ?? remote!.url;
    const t0 = performance.now();
    const summary = await processFile({
      input,
      output,
      baseUrl,
      apiKey: DEFAULT_API_KEY,
      country: 'DE',
      logger: createSilentLogger(),
      engine: { store: 'off' },
    });
    const seconds = (performance.now() - t0) / 1000;
    const counts = local ? countsOf(local) : await remote!.counts();
    return { ...counts, seconds, exitCode: summary.exitCode };
  } finally {
    await local?.close();
    await remote?.close();
  }
}

const median = (xs: number[]): number => middle(xs, 0);

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 2000);
  const runs = Math.max(1, Number(process.argv[3] ?? 3));
  const dir = await mkdtemp(join(tmpdir(), 'dq-csv-rate-'));
  const figures = {
    separate: { rates: [] as number[], steady: [] as number[], tooMany: 0 },
    inProcess: { rates: [] as number[], steady: [] as number[], tooMany: 0 },
  };
  try {
    const input = join(dir, 'in.csv');
    let csv = 'id,street,houseNumber,postalCode,locality\n';
    for (let i = 0; i < rows; i++) csv += `${i},Hauptstraße,${i + 1},10115,Berlin\n`;
    await writeFile(input, csv);
    for (let run = 0; run < runs; run++) {
      for (const inProcess of [false, true]) {
        const r = await runOnce(input, join(dir, `out-${run}.csv`), inProcess);
        const f = inProcess ? figures.inProcess : figures.separate;
        const steady = (r.ok - 1) / ((r.lastOkMs - r.firstOkMs) / 1000);
        f.rates.push(r.ok / r.seconds);
        f.steady.push(steady);
        f.tooMany += r.tooMany;
        console.log(
          `run ${run + 1}/${runs} (sandbox ${inProcess ? 'in-process' : 'in its own process'}): ${r.ok} calls in ${r.seconds.toFixed(2)} s = ${(r.ok / r.seconds).toFixed(1)} calls/s (first to last call ${steady.toFixed(1)}/s), ${r.tooMany} × 429${r.tooMany > 0 ? ` (at ${r.tooManyAtMs.map((ms) => `${ms} ms`).join(', ')} after the first call)` : ''}, exit ${r.exitCode}`,
        );
      }
    }
    const summary = (f: { rates: number[]; steady: number[]; tooMany: number }) => ({
      callsPerSecond: Number(median(f.rates).toFixed(1)),
      ratio: Number((median(f.rates) / LIMIT).toFixed(3)),
      steadyRatio: Number((median(f.steady) / LIMIT).toFixed(3)),
      tooManyRequests: f.tooMany,
      samples: f.rates.map((r) => Number(r.toFixed(1))),
      steadySamples: f.steady.map((r) => Number(r.toFixed(1))),
    });
    const result = {
      benchmark: 'csv-rate',
      rows,
      runs,
      limitPerSecond: LIMIT,
      target: 0.97,
      ...summary(figures.separate),
      inProcess: summary(figures.inProcess),
      measuredAt: new Date().toISOString(),
    };
    console.log(
      `dq-csv ${result.callsPerSecond} calls/s | limit ${LIMIT}/s | ratio ${result.ratio} (target ≥ 0.97, median of ${runs}), first to last call ${result.steadyRatio} | 429s: ${result.tooManyRequests} (target 0)`,
    );
    console.log(
      `  sandbox in-process: ratio ${result.inProcess.ratio}, first to last call ${result.inProcess.steadyRatio}, 429s: ${result.inProcess.tooManyRequests}`,
    );
    await writeResult('csv-rate', result);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') await serve();
else await main();
