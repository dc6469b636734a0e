import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseString } from '@fast-csv/parse';
import { writeToString } from '@fast-csv/format';
import { DEFAULT_API_KEY, generateDirtyInputs } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { processFile } from '../src/run.js';
import { runCli, unlimited, useSandbox, useTempDir } from './helpers.js';

// JSON and NDJSON records keep their members in the order they are written, keys such as "2" and
// "10" included (JavaScript lists those first, in ascending order): in the output of a run, and in
// the cleaned file `review apply` writes. The sandbox over real HTTP, real files.

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

/** The keys every record of {@link recordText} has, in the order written. */
const FIXED_KEYS = ['id', '2', '10', '1', '01', '4294967295'];

/**
 * One input record as written: keys JavaScript would list first ("2", "10", "1") after others, a
 * nested object and an object in an array the run passes through untouched, and keys it would not
 * move ("01", "4294967295").
 */
function recordText(id: number, input: Record<string, unknown>): string {
  return `{"id":${id},"2":"two",${JSON.stringify(input).slice(1, -1)},"10":{"b":true,"1":[{"z":0,"0":1}]},"1":null,"01":"a","4294967295":1.10}`;
}

function inputs(n: number, classes: readonly string[]): Record<string, unknown>[] {
  return generateDirtyInputs(120, { seed: 5, country: 'DE' })
    .filter((d) => classes.includes(d.intendedClass))
    .slice(0, n)
    .map((d) => Object.fromEntries(Object.entries(d.input)));
}

function inputFile(format: 'json' | 'ndjson', records: readonly string[]): string {
  return format === 'ndjson' ? records.join('\n') + '\n' : `[\n${records.join(',\n')}\n]\n`;
}

function parseCsvText(text: string): Promise<string[][]> {
  return new Promise((resolve, reject) => {
    const rows: string[][] = [];
    parseString(text, { headers: false })
      .on('data', (r: string[]) => rows.push(r))
      .on('error', reject)
      .on('end', () => resolve(rows));
  });
}

describe('JSON and NDJSON member order', () => {
  it.each(['json', 'ndjson'] as const)('a %s output holds every input member where it was written, the dq_ members after them', async (format) => {
    const records = inputs(4, ['A', 'D', 'E']).map((input, i) => recordText(i + 1, input));
    const input = join(dir, `order.${format}`);
    await writeFile(input, inputFile(format, records));
    const summary = await processFile({
      input,
      output: join(dir, `order.out.${format}`),
      country: 'DE',
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      engine: { rateLimits: { batch: 0 }, store: 'off' },
    });
    const lines = (await readFile(summary.paths.output, 'utf8')).split('\n').filter((l) => l.startsWith('{'));
    // Each output record: the input record's text, byte for byte up to its closing brace, then dq_status.
    expect(lines.map((line, i) => line.slice(0, records[i]!.length + 12))).toEqual(records.map((r) => r.slice(0, -1) + ',"dq_status":'));
  });

  it.each(['json', 'ndjson'] as const)(
    'review of a %s output: the export lists the input keys as written; apply writes the decided record with its members in place',
    async (format) => {
      const objects = inputs(6, ['A', 'D', 'E']);
      const records = objects.map((input, i) => recordText(i + 1, input));
      const input = join(dir, `review-order.${format}`);
      const output = join(dir, `review-order.out.${format}`);
      await writeFile(input, inputFile(format, records));
      const run = await runCli(['validate', '--input', input, '--output', output, '--country', 'DE'], sandbox.env());
      expect(run.code, run.stderr).toBe(0);
      const review = join(dir, `review-order.${format}.review.csv`);
      const exported = await runCli(['review', 'export', '--input', output, '--output', review]);
      expect(exported.code, exported.stderr).toBe(0);
      const [header, ...rows] = await parseCsvText(await readFile(review, 'utf8'));
      expect(header![0]).toBe('line');
      expect(header!.filter((name) => FIXED_KEYS.includes(name))).toEqual(FIXED_KEYS);
      const h = (name: string) => header!.indexOf(name);
      const d = rows.find((r) => r[h('class')] === 'D');
      expect(d, 'a review row of class D').toBeDefined();
      d![h('decision')] = 'keep';
      await writeFile(review, await writeToString([header!, ...rows]));
      const applied = join(dir, `review-order.applied.${format}`);
      const done = await runCli(['review', 'apply', '--input', review, '--output', output, '--to', applied]);
      expect(done.code, done.stderr).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ kept: 1 });
      const lines = (await readFile(applied, 'utf8')).split('\n').filter((l) => l.startsWith('{'));
      const row = Number(d![0]) - 1;
      expect(lines[row]!.slice(0, records[row]!.length + 18)).toBe(records[row]!.slice(0, -1) + ',"dq_status":"kept"');
    },
  );
});
