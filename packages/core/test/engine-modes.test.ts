import { describe, expect, it } from 'vitest';
import { createEngine, createSilentLogger, exitCodeForReport, isRunStop } from '@dq/core';
import type { Engine, EngineConfig, RunReport } from '@dq/core';
import { closeAfterEach, startScriptedPlatform } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

let platform: ScriptedPlatform | undefined;
let engine: Engine | undefined;

closeAfterEach(
  () => [engine, platform],
  () => (engine = platform = undefined),
);

function start(mode: EngineConfig['mode'], extra: Partial<EngineConfig> = {}): Engine {
  if (!platform) throw new Error('start the platform first');
  engine = createEngine({
    mode,
    baseUrl: 'http://127.0.0.1:9', // address host: must not be used by company modes
    realtimeUrl: platform.url,
    apiKey: 'k',
    rateLimits: { company: 0 },
    retry: { maxAttempts: 2, baseDelayMs: 1 },
    logger: createSilentLogger(),
    ...extra,
  });
  return engine;
}

const hit = (name: string, score: number) => ({ id: 1, company: name, zip: 10117, city: 'Berlin', searchScore: score });

describe('engine: company, register and VAT modes', () => {
  it('accepts a company with hits (best first, total from X-Total-Count) and marks one without hits invalid', async () => {
    platform = await startScriptedPlatform((req) =>
      req.body['company'] === 'Nobody GmbH'
        ? { body: { status: 200, companies: [] }, headers: { 'x-total-count': '0' } }
        : { body: { status: 200, companies: [hit('ACME GmbH', 98), hit('ACME AG', 90)] }, headers: { 'x-total-count': '2' } },
    );
    const results = await start('company', { company: { minScore: 90, limit: 5, lang: 'de' } }).process([
      { company: 'ACME GmbH', city: 'Berlin', zip: 10117 },
      { company: 'Nobody GmbH' },
      { city: 'Berlin' }, // no name: refused locally
    ]);
    expect(results[0]).toMatchObject({ status: 'accepted', hits: 2, company: { company: 'ACME GmbH', searchScore: 98 } });
    expect(results[1]).toMatchObject({ status: 'invalid', hits: 0 });
    expect(results[1]?.company).toBeUndefined();
    expect(results[2]).toMatchObject({ status: 'invalid-input', source: 'local' });
    expect(platform.seen).toHaveLength(2);
    const acme = platform.seen.find((s) => s.body['company'] === 'ACME GmbH');
    const query = acme?.query;
    expect(query?.get('searchMethod')).toBe('company');
    expect(query?.get('minScore')).toBe('90');
    expect(query?.get('limit')).toBe('5');
    expect(query?.get('lang')).toBe('de');
    expect(acme?.path).toBe('/companies/v2');
    expect(acme?.body).toEqual({ company: 'ACME GmbH', city: 'Berlin', zip: '10117' });
  });

  it('searches the commercial register in tr mode', async () => {
    platform = await startScriptedPlatform(() => ({ body: { status: 200, companies: [hit('ACME GmbH', 100)] } }));
    const [result] = await start('tr').process([{ trCourt: 'Berlin', trType: 'HRB', trNo: 12345 }]);
    expect(result).toMatchObject({ status: 'accepted', hits: 1 });
    expect(platform.seen[0]?.query.get('searchMethod')).toBe('tr');
    expect(platform.seen[0]?.body).toEqual({ trCourt: 'Berlin', trType: 'HRB', trNo: '12345' });
  });

  it('maps VALID_VAT_ID to accepted and INVALID_VAT_ID to invalid', async () => {
    platform = await startScriptedPlatform((req) => ({
      body: { status: 200, code: String(req.body['vatId']).startsWith('DE') ? 'VALID_VAT_ID' : 'INVALID_VAT_ID' },
    }));
    const results = await start('vat').process([{ vatId: 'DE123456789' }, { vatId: 'XX1' }, { vatId: ' DE123456789 ' }]);
    expect(results.map((r) => [r.status, r.vatCode, r.source])).toEqual([
      ['accepted', 'VALID_VAT_ID', 'api'],
      ['invalid', 'INVALID_VAT_ID', 'api'],
      ['accepted', 'VALID_VAT_ID', 'dedup'],
    ]);
    expect(platform.seen.map((s) => s.query.get('searchMethod'))).toEqual(['vat', 'vat']);
  });

  it('treats a company 400 as invalid input and a company 403 as a run stop', async () => {
    const envelope = (status: number, error: string) => ({
      status,
      body: { timestamp: '2025-01-01T00:00:00Z', status, error, message: error, path: '/companies/v2' },
    });
    platform = await startScriptedPlatform((req) => (req.body['vatId'] === 'ZZ1' ? envelope(400, 'Bad Request') : envelope(403, 'Forbidden')));
    const e = start('vat');
    const [bad] = await e.process([{ vatId: 'ZZ1' }]);
    expect(bad).toMatchObject({ status: 'invalid-input', error: { code: 'company-bad-request' } });
    const stop = await e.process([{ vatId: 'DE1' }]).catch((err: unknown) => err);
    expect(isRunStop(stop)).toBe(true);
  });
});

describe('engine: exit codes from the report', () => {
  const report = (records: number, unavailable: number, invalidInput = 0, unsupportedCountry = 0): RunReport =>
    ({
      records,
      byStatus: {
        accepted: records - unavailable - invalidInput - unsupportedCountry,
        review: 0,
        invalid: 0,
        'invalid-input': invalidInput,
        'unsupported-country': unsupportedCountry,
        unavailable,
      },
    }) as RunReport;

  it('says 0 without failures, 4 past --max-failed, 75 when nothing could be answered', () => {
    expect(exitCodeForReport(report(10, 0))).toBe(0);
    expect(exitCodeForReport(report(10, 1), { maxFailed: 0.2 })).toBe(0);
    expect(exitCodeForReport(report(10, 3), { maxFailed: 0.2 })).toBe(4);
    expect(exitCodeForReport(report(10, 8, 2))).toBe(75);
  });

  it('counts an unsupported country as a finding about the data, not as a failure', () => {
    expect(exitCodeForReport(report(10, 0, 0, 10))).toBe(0);
    // Every record the platform could have answered stayed unavailable: worth a retry later.
    expect(exitCodeForReport(report(10, 2, 0, 8))).toBe(75);
  });
});
