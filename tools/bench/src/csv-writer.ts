/**
 * CSV writer: dq-csv's line formatter (`formatCsvLine`, what its sink writes) against
 * `@fast-csv/format`, each turning the same rows into CSV text, in one process, alternating order
 * run by run; medians and spread of rows/s. Both produce text in memory (fast-csv's stream is read
 * to its end), so neither pays for a disk. Also checks that both give the same bytes.
 *
 * Run: `node tools/bench/dist/csv-writer.js [rows=200000] [runs=5]`
 */
import { format } from '@fast-csv/format';
import { formatCsvLine } from '@dq/csv-processor';
import { middle } from './stats.js';
import { writeResult } from './results.js';

function rows(n: number): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < n; i++) {
    out.push([
      String(i),
      `Hauptstraße ${i % 200}`,
      i % 7 === 0 ? `Müller, "Söhne" ${i}` : `Firma ${i}`,
      String(10_000 + (i % 89_999)),
      'Berlin',
      'DE',
      'accepted',
      'A',
      i % 11 === 0 ? 'line\nbreak' : '',
    ]);
  }
  return out;
}

function dq(data: string[][]): { ms: number; text: string } {
  const started = performance.now();
  const parts: string[] = [];
  for (const row of data) parts.push(formatCsvLine(row, ','));
  const text = parts.join('');
  return { ms: performance.now() - started, text };
}

async function fastCsv(data: string[][]): Promise<{ ms: number; text: string }> {
  const started = performance.now();
  const stream = format({ delimiter: ',', rowDelimiter: '\n', includeEndRowDelimiter: true });
  const parts: string[] = [];
  stream.on('data', (c: Buffer | string) => parts.push(String(c)));
  const done = new Promise<void>((resolve, reject) => stream.on('end', resolve).on('error', reject));
  for (const row of data) stream.write(row);
  stream.end();
  await done;
  return { ms: performance.now() - started, text: parts.join('') };
}

const median = (xs: number[]): number => middle(xs, 0);

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 200_000);
  const runs = Number(process.argv[3] ?? 5);
  const data = rows(n);
  dq(data.slice(0, 5_000));
  await fastCsv(data.slice(0, 5_000));
  const dqRates: number[] = [];
  const fcRates: number[] = [];
  let sameBytes = true;
  for (let r = 0; r < runs; r++) {
    const order = r % 2 === 0 ? ['dq', 'fc'] : ['fc', 'dq'];
    const texts: Record<string, string> = {};
    for (const side of order) {
      const res = side === 'dq' ? dq(data) : await fastCsv(data);
      (side === 'dq' ? dqRates : fcRates).push(Math.round((n / res.ms) * 1000));
      texts[side] = res.text;
    }
    sameBytes &&= texts['dq'] === texts['fc'];
    console.log(`run ${r + 1}/${runs}: dq-csv ${dqRates.at(-1)} rows/s, fast-csv ${fcRates.at(-1)} rows/s`);
  }
  const result = {
    benchmark: 'csv-writer',
    rows: n,
    runs,
    node: process.version,
    dqCsvRowsPerSecond: median(dqRates),
    dqCsvSpread: [Math.min(...dqRates), Math.max(...dqRates)],
    fastCsvRowsPerSecond: median(fcRates),
    fastCsvSpread: [Math.min(...fcRates), Math.max(...fcRates)],
    ratio: Number((median(dqRates) / median(fcRates)).toFixed(2)),
    sameBytes,
  };
  console.log(
    `dq-csv writer ${result.dqCsvRowsPerSecond} rows/s (${result.dqCsvSpread.join('–')}) | @fast-csv/format ${result.fastCsvRowsPerSecond} rows/s (${result.fastCsvSpread.join('–')}) | ratio ${result.ratio} (median of ${runs}) | same bytes: ${sameBytes}`,
  );
  await writeResult('csv-writer', result);
}

await main();
