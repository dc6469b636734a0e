import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Runs every benchmark in turn, each in its own process (so none shares an event loop or a heap
 * with another), then prints each result's figures beside their targets from the JSON it wrote.
 * `npm run bench -- engine-overhead download` runs only the named ones.
 */
const here = dirname(fileURLToPath(import.meta.url));
const results = join(here, '..', 'results');

/** Name, arguments (rows/messages and runs where the script takes them), result file. */
const BENCHMARKS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['throttle-precision', []],
  ['engine-overhead', ['20000', '5']],
  ['sandbox-throughput', []],
  ['csv-throughput', ['1000000', '3']],
  ['csv-rate', ['2000', '3']],
  ['pg-cleanse', ['1000000', '5']],
  ['download', []],
  ['kafka-throughput', ['30000', '3']],
  ['store-choice', ['1000000', '5']],
  ['store-overhead', ['20000', '5']],
  ['store-rerun', ['1000000', '5']],
  ['store-pg-rerun', ['1000000', '5']],
  ['pg-status-rerun', ['200000', '5']],
  ['csv-writer', ['200000', '5']],
];

const only = process.argv.slice(2);
const unknown = only.filter((name) => !BENCHMARKS.some(([known]) => known === name));
if (unknown.length > 0) {
  console.error(`bench: no benchmark named ${unknown.join(', ')}; the benchmarks: ${BENCHMARKS.map(([name]) => name).join(', ')}`);
  process.exit(2);
}
const failed: string[] = [];
for (const [name, args] of BENCHMARKS) {
  if (only.length > 0 && !only.includes(name)) continue;
  console.log(`\n=== ${name} ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [join(here, `${name}.js`), ...args], { stdio: 'inherit' });
  if (r.status !== 0) failed.push(`${name} (exit ${r.status ?? r.signal})`);
}

console.log('\n=== summary (figures from tools/bench/results/*.json)');
for (const [name] of BENCHMARKS) {
  if (only.length > 0 && !only.includes(name)) continue;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(join(results, `${name}.json`), 'utf8'));
  } catch {
    console.log(`${name.padEnd(20)} no result`);
    continue;
  }
  console.log(`${name.padEnd(20)} ${figures(json).join('  ')}`);
}
if (failed.length > 0) {
  console.error(`failed: ${failed.join(', ')}`);
  process.exitCode = 1;
}

/** The ratio, target and 429 figures of a result, at any depth up to two levels. */
function figures(value: unknown, prefix = '', depth = 0): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || depth > 2) return [];
  const out: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === 'number' && /ratio|target|tooMany|429/i.test(key)) out.push(`${prefix}${key}=${v}`);
    else out.push(...figures(v, `${prefix}${key}.`, depth + 1));
  }
  return out;
}
