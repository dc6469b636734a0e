import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { processFile } from '../src/run.js';
import { describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { batchCalls, readCsv, unlimited, useSandbox, useTempDir } from './helpers.js';

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

const records = [
  { id: 1, street: 'Hauptstraße', houseNumber: '5', postalCode: '10115', locality: 'Berlin' },
  { id: 2, street: 'Schillerstraße', houseNumber: '3', postalCode: '80336', locality: 'München', note: { vip: true } },
];

describe('JSON inputs', () => {
  it('cleans a JSON array into a JSON array with dq_ fields, rejecting elements that are not objects', async () => {
    const input = join(dir, 'in.json');
    await writeFile(input, JSON.stringify([records[0], 42, records[1]], null, 2));
    const summary = await processFile({
      input,
      output: join(dir, 'out.json'),
      country: 'DE',
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      maxFailed: 1,
      engine: { rateLimits: { batch: 0 } },
    });
    const out = JSON.parse(await readFile(summary.paths.output, 'utf8')) as Record<string, unknown>[];
    expect(out.map((o) => o['id'])).toEqual([1, 2]);
    expect(out[1]?.['note']).toEqual({ vip: true });
    expect(typeof out[0]?.['dq_status']).toBe('string');
    expect(out[0]).toHaveProperty('dq_request_id');
    const rejects = await readCsv(summary.paths.rejects);
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([['2', 'not-an-object']]);
  });

  it('cleans NDJSON line by line, rejecting lines that are not JSON objects', async () => {
    const input = join(dir, 'in.ndjson');
    await writeFile(input, `${JSON.stringify(records[0])}\n{broken\n\n${JSON.stringify(records[1])}\n`);
    const summary = await processFile({
      input,
      output: join(dir, 'out.ndjson'),
      country: 'DE',
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      maxFailed: 1,
      engine: { rateLimits: { batch: 0 } },
    });
    const lines = (await readFile(summary.paths.output, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((o) => o['id'])).toEqual([1, 2]);
    const rejects = await readCsv(summary.paths.rejects);
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([['2', 'invalid-json']]);
  });

  it.each(['ndjson', 'json'] as const)('writes the numbers of a %s input as written: 20-digit ids, 1.10, 1e3, -0', async (format) => {
    // What each input object's text holds before its closing brace in the output: every byte of it.
    const objects = [
      '{"id":12345678901234567890,"amount":1.10,"rate":1e3,"delta":-0,"street":"Hauptstraße","houseNumber":5,"postalCode":10115,"locality":"Berlin","tags":[1.0,9007199254740993]}',
      '{"id":98765432109876543210,"amount":2.5,"street":"Schillerstraße","houseNumber":"3","postalCode":"80336","locality":"München"}',
    ];
    const input = join(dir, `numbers.${format}`);
    await writeFile(input, format === 'ndjson' ? objects.join('\n') + '\n' : `[${objects.join(',\n')}]`);
    const summary = await processFile({
      input,
      output: join(dir, `numbers.out.${format}`),
      country: 'DE',
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      engine: { rateLimits: { batch: 0 }, store: 'off' },
    });
    const lines = (await readFile(summary.paths.output, 'utf8')).split('\n').filter((l) => l.startsWith('{'));
    expect(lines).toHaveLength(2);
    lines.forEach((line, i) => expect(line.slice(0, objects[i]!.length + 12)).toBe(objects[i]!.slice(0, -1) + ',"dq_status":'));
    expect(summary.totals.byStatus.accepted).toBe(2); // the numeric postal code and house number were sent
  });

  it.each(['ndjson', 'json'] as const)('rejects a %s object that already has a dq_ key, instead of writing over its value', async (format) => {
    const objects = [{ ...records[0], dq_status: 'checked by hand' }, records[1], { ...records[1], id: 3, dq_review_decision: 'keep' }];
    const input = join(dir, `clash.${format}`);
    await writeFile(input, format === 'ndjson' ? objects.map((o) => JSON.stringify(o)).join('\n') : JSON.stringify(objects));
    const summary = await processFile({
      input,
      output: join(dir, `clash.out.${format}`),
      country: 'DE',
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      maxFailed: 1,
      engine: { rateLimits: { batch: 0 }, store: 'off' },
    });
    const text = await readFile(summary.paths.output, 'utf8');
    expect(text).not.toContain('checked by hand');
    const written = text
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l.replace(/,$/, '')) as Record<string, unknown>);
    expect(written.map((o) => o['id'])).toEqual([2]);
    const rejects = await readCsv(summary.paths.rejects);
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([
      ['1', 'result-key-clash'],
      ['3', 'result-key-clash'],
    ]);
    expect(rejects.rows[0]?.[2]).toContain('dq_status');
    expect(JSON.parse(rejects.rows[0]![3]!)).toEqual(objects[0]); // the input value is kept, in the rejects
    expect(summary.totals.rows + summary.totals.rejects).toBe(3);
  });
});

describe('dedup', () => {
  it('makes 70 % of the calls for a file with 30 % repeated addresses', async () => {
    const sample = makeSampleCsv(700, 21).trim().split('\n');
    const [header, ...rows] = sample;
    // 700 rows as generated (the generator itself repeats ~10 %), then 300 copies of earlier rows.
    const copies = Array.from({ length: 300 }, (_, i) => rows[(i * 7) % rows.length]!);
    const input = join(dir, 'dedup.csv');
    await writeFile(input, [header, ...rows, ...copies].join('\n') + '\n');
    const distinct = new Set(
      rows.map((r) =>
        r
          .split(';')
          .slice(2, 6)
          .map((v) => v.trim())
          .join(';'),
      ),
    ).size;
    sandbox.resetStats();
    const summary = await processFile({
      input,
      output: join(dir, 'dedup.out.csv'),
      delimiter: ';',
      country: 'DE',
      map: { addressLine: 'strasse', postalCode: 'plz', locality: 'ort', country: 'land' },
      baseUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      maxFailed: 1,
      engine: { rateLimits: { batch: 0 } },
    });
    expect(summary.totals.rows).toBe(1000);
    const calls = batchCalls(sandbox.stats());
    expect(calls).toBeLessThanOrEqual(distinct);
    expect(calls).toBeLessThanOrEqual(700);
    expect(summary.totals.apiCalls).toBe(calls);
  });
});
