/**
 * dq-csv under the platform's rate limit: the sandbox enforces batch/sync at 100 requests/s (the
 * contract's limit, part 8) and answers 429 above it; dq-csv runs with its default client-side
 * limit. Reported: achieved calls/s ÷ 100 (target ≥ 0.97) and the number of 429s (target 0).
 * Calls are counted by the sandbox; time is the run's wall time.
 *
 * Run: `node tools/bench/dist/csv-rate.js [rows=2000] [runs=3]`
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSilentLogger } from '@dq/core';
import { processFile } from '@dq/csv-processor';
import { DEFAULT_API_KEY, startSandbox } from '@dq/sandbox';

const LIMIT = 100; // requests per second, contract part 8

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 2000);
  const runs = Math.max(1, Number(process.argv[3] ?? 3));
  const dir = await mkdtemp(join(tmpdir(), 'dq-csv-rate-'));
  const rates: number[] = [];
  let tooMany = 0;
  try {
    const input = join(dir, 'in.csv');
    let csv = 'id,street,houseNumber,postalCode,locality\n';
    for (let i = 0; i < rows; i++) csv += `${i},Hauptstraße,${i + 1},10115,Berlin\n`;
    await writeFile(input, csv);
    for (let run = 0; run < runs; run++) {
      const sandbox = await startSandbox({ port: 0 }); // default account: contract limits enforced
      try {
        const t0 = performance.now();
        const summary = await processFile({ input, output: join(dir, `out-${run}.csv`), baseUrl: sandbox.url, apiKey: DEFAULT_API_KEY, country: 'DE', logger: createSilentLogger() });
        const seconds = (performance.now() - t0) / 1000;
        const batch = sandbox.stats().requests['batch'];
        const ok = batch?.byStatus['200'] ?? 0;
        const limited = batch?.byStatus['429'] ?? 0;
        tooMany += limited;
        rates.push(ok / seconds);
        console.log(`run ${run + 1}/${runs}: ${ok} calls in ${seconds.toFixed(2)} s = ${(ok / seconds).toFixed(1)} calls/s, ${limited} × 429, exit ${summary.exitCode}`);
      } finally {
        await sandbox.close();
      }
    }
    const result = {
      benchmark: 'csv-rate', rows, runs, limitPerSecond: LIMIT, callsPerSecond: Number(median(rates).toFixed(1)),
      ratio: Number((median(rates) / LIMIT).toFixed(3)), target: 0.97, tooManyRequests: tooMany,
      samples: rates.map((r) => Number(r.toFixed(1))), measuredAt: new Date().toISOString(),
    };
    console.log(`dq-csv ${result.callsPerSecond} calls/s | limit ${LIMIT}/s | ratio ${result.ratio} (target ≥ 0.97, median of ${runs}) | 429s: ${tooMany} (target 0)`);
    const out = fileURLToPath(new URL('../results/', import.meta.url));
    await mkdir(out, { recursive: true });
    await writeFile(`${out}csv-rate.json`, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
