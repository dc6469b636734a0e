import { describe, expect, it } from 'vitest';
import type { Engine, EngineConfig } from '@dq/core';
import { addresses, batchAnswer, closeAfterEach, startScriptedPlatform, testEngine } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

const API_KEY = 'test-key-4f1d9c';
let platform: ScriptedPlatform | undefined;
let engine: Engine | undefined;

closeAfterEach(
  () => [engine, platform],
  () => (engine = platform = undefined),
);

function start(url: string, extra: Partial<EngineConfig> = {}): Engine {
  engine = testEngine(url, API_KEY, extra);
  return engine;
}

describe('engine: order, dedup and policy', () => {
  it.each([0, 1])('returns results in input order when the platform answers out of order (threads: %i)', async (threads) => {
    const classes = ['A', 'B', 'C', 'D', 'E', 'F'];
    platform = await startScriptedPlatform((req) => {
      const i = Number(String(req.body['street']).split(' ')[1]);
      return { ...batchAnswer(req, classes[i % 6] ?? 'A'), delayMs: (i * 7919) % 40 };
    });
    const results = await start(platform.url, { threads }).process(addresses(120));
    expect(results).toHaveLength(120);
    results.forEach((r, i) => {
      expect(r.resultClass).toBe(classes[i % 6]);
      expect(r.address?.street).toBe(`Street ${i}`);
    });
    expect(platform.seen).toHaveLength(120);
    expect(platform.seen.every((s) => s.path === '/location/v1/validate/batch/sync')).toBe(true);
    expect(platform.seen[0]?.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('sends each distinct input once: 30 % duplicates cost 70 % of the calls; a value in other case or spacing is a question of its own', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const distinct = addresses(70);
    // Duplicates differ only in the blanks around values (trimmed: the same question), and are spread through the batch.
    const dupes = distinct.slice(0, 30).map((r) => ({ ...r, street: `  ${r.street} `, locality: ` ${r.locality}` }));
    // The platform answers these differently (class B: it normalised case or spacing): never shared.
    const variants = distinct.slice(0, 10).map((r, i) => ({ ...r, street: i % 2 === 0 ? r.street.toUpperCase() : r.street.replace(' ', '  ') }));
    const records = [...distinct, ...dupes, ...variants].sort((a, b) => a.street.localeCompare(b.street));
    const e = start(platform.url);
    const results = await e.process(records);
    expect(platform.seen).toHaveLength(80);
    expect(results.filter((r) => r.source === 'api')).toHaveLength(80);
    expect(results.filter((r) => r.source === 'dedup')).toHaveLength(30);
    for (const v of variants) expect(platform.seen.filter((s) => s.body['street'] === v.street)).toHaveLength(1);
    const report = e.report();
    expect(report.apiCalls).toBe(80);
    expect(report.callsSavedByDedup).toBe(30);
    expect(report.records).toBe(110);
    expect(report.byStatus.accepted).toBe(110);
  });

  it('shares one call between batches running at the same time and answers repeats from the cache', async () => {
    platform = await startScriptedPlatform((req) => ({ ...batchAnswer(req, 'B'), delayMs: 50 }));
    const e = start(platform.url);
    const [first, second] = await Promise.all([e.process(addresses(20)), e.process(addresses(20))]);
    expect(platform.seen).toHaveLength(20);
    expect(first.filter((r) => r.source === 'api').length + second.filter((r) => r.source === 'api').length).toBe(20);
    const third = await e.process(addresses(20));
    expect(platform.seen).toHaveLength(20);
    expect(third.every((r) => r.source === 'cache' && r.resultClass === 'B')).toBe(true);
    expect(e.report().callsSavedByCache).toBe(20);
    expect(e.report().callsSavedByDedup).toBe(20);
  });

  it('maps result classes through the default policy and a configured one', async () => {
    const classes = ['A', 'B', 'C', 'D', 'E', 'F'];
    platform = await startScriptedPlatform((req) => {
      const i = Number(String(req.body['street']).split(' ')[1]);
      return batchAnswer(req, classes[i] ?? 'A', classes[i] === 'E' ? 3 : 1);
    });
    const byDefault = await start(platform.url).process(addresses(6));
    expect(byDefault.map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted', 'review', 'review', 'invalid']);
    expect(byDefault[4]?.candidates).toHaveLength(3);
    expect(byDefault.every((r) => r.requestId?.startsWith('req-'))).toBe(true);
    await engine?.close();

    const strict = await start(platform.url, { policy: { C: 'review', D: 'invalid' } }).process(addresses(6));
    expect(strict.map((r) => r.status)).toEqual(['accepted', 'accepted', 'review', 'invalid', 'review', 'invalid']);
    expect(engine?.report().byClass).toEqual({ A: 1, B: 1, C: 1, D: 1, E: 1, F: 1 });
  });

  it('refuses records that break the contract locally, naming the field, without calling', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const e = start(platform.url, { defaultCountry: 'DE' });
    const results = await e.process([
      { street: 'Hauptstr.', houseNumber: '1' }, // no postal code, no locality, no localityLine
      { street: 'Hauptstr.', houseNumber: '1', localityLine: '10117 Berlin', country: 'Germany' },
      { street: 'Hauptstr.', houseNumber: '1', localityLine: '  10117 Berlin ', country: '' }, // default country
    ]);
    expect(results[0]).toMatchObject({ status: 'invalid-input', source: 'local', error: { code: 'local-validation' } });
    expect(results[0]?.error?.violations?.map((v) => v.fieldName)).toContain('localityIdentificationSet');
    expect(results[1]?.error?.violations?.map((v) => v.fieldName)).toEqual(['country']);
    expect(results[2]).toMatchObject({ status: 'accepted', source: 'api' });
    expect(platform.seen).toHaveLength(1);
    expect(platform.seen[0]?.body).toMatchObject({ localityLine: '10117 Berlin', country: 'DE' });
    expect(await e.plan([{ street: 'x' }, ...addresses(3), ...addresses(2)])).toEqual({
      records: 6,
      distinct: 3,
      calls: 3,
      fromStore: 0,
      invalidInput: 1,
    });
  });

  it('sends what the platform takes: a lower-case country upper-cased, a lone locality or postal code as localityLine', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const e = start(platform.url);
    const results = await e.process([
      { street: 'Hauptstr.', houseNumber: '1', postalCode: '10117', locality: 'Berlin', country: 'de' },
      { street: 'Hauptstr.', houseNumber: '2', locality: 'Berlin', country: 'DE' },
      { street: 'Hauptstr.', houseNumber: '3', postalCode: '10117', country: 'DE' },
    ]);
    expect(results.map((r) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
    const bodies = platform.seen.map((s) => s.body).sort((a, b) => String(a['houseNumber']).localeCompare(String(b['houseNumber'])));
    expect(bodies[0]).toMatchObject({ postalCode: '10117', locality: 'Berlin', country: 'DE' });
    expect(bodies[1]).toMatchObject({ localityLine: 'Berlin', country: 'DE' });
    expect(bodies[1]).not.toHaveProperty('locality');
    expect(bodies[2]).toMatchObject({ localityLine: '10117', country: 'DE' });
    expect(bodies[2]).not.toHaveProperty('postalCode');
  });

  it('plans without calling: inputs already answered need no call', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const e = start(platform.url);
    await e.process(addresses(10));
    expect(await e.plan([...addresses(15), ...addresses(5)])).toEqual({ records: 20, distinct: 15, calls: 5, fromStore: 0, invalidInput: 0 });
    expect(platform.seen).toHaveLength(10);
  });

  it('uses /validate with include options when configured', async () => {
    platform = await startScriptedPlatform((req) => ({
      body: { resultClass: 'A', results: [{ street: String(req.body['street']) }] },
    }));
    const results = await start(platform.url, { addressEndpoint: 'validate', include: ['coordinates-wgs84'] }).process(addresses(2));
    expect(results.map((r) => r.status)).toEqual(['accepted', 'accepted']);
    expect(platform.seen.map((s) => s.path)).toEqual(['/location/v1/validate', '/location/v1/validate']);
    expect(platform.seen[0]?.body['_options']).toEqual({ include: ['coordinates-wgs84'] });
    expect(platform.seen[0]?.body['customerAddressId']).toBeUndefined();
  });

  it.each([0, 2])('keeps the concurrency bound across all worker threads (threads: %i)', async (threads) => {
    platform = await startScriptedPlatform((req) => ({ ...batchAnswer(req, 'A'), delayMs: 150 }));
    await start(platform.url, { threads, concurrency: 6 }).process(addresses(60));
    expect(platform.seen).toHaveLength(60);
    expect(platform.maxInFlight).toBeLessThanOrEqual(6);
    expect(platform.maxInFlight).toBeGreaterThanOrEqual(4);
  });
});
