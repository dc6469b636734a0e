import { CompanyClient, createEngine } from '@dq/core';
import type { Engine, EngineConfig, EngineRecord, RecordResult } from '@dq/core';
import { createCompanyService, makeVatId, VAT_COUNTRIES } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_KEY, captureLogger, requestsTo, sandboxWith, transportOn } from '@dq/test-support/platform';

// Contract 4.7 and 2.3–2.4 through the engine's company, tr and vat modes and the CompanyClient,
// with inputs taken from the register the sandbox serves (same seed, same register).
const register = createCompanyService({ seed: 1 }).companies;
const active = register
  .filter((c) => c.trStatus === 'active')
  .filter((_, i) => i % 401 === 0)
  .slice(0, 6);
const inactive = register.find((c) => c.trStatus === 'inactive');
// Two active companies of one name in different places: a search by the name alone cannot tell them apart.
const byName = new Map<string, typeof register>();
for (const c of register) if (c.trStatus === 'active') byName.set(c.company, [...(byName.get(c.company) ?? []), c]);
const twins = [...byName.values()].find((same) => same.length === 2);
if (inactive === undefined || active.length < 6 || twins === undefined) throw new Error('register lacks the companies this test needs');

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await sandboxWith();
});
afterAll(() => sandbox.close());

async function run(mode: EngineConfig['mode'], records: EngineRecord[], extra: Partial<EngineConfig> = {}): Promise<RecordResult[]> {
  const engine: Engine = createEngine({ mode, baseUrl: sandbox.url, apiKey: TEST_KEY, threads: 1, logger: captureLogger('info').logger, ...extra });
  try {
    return await engine.process(records);
  } finally {
    await engine.close();
  }
}

describe('the engine in company, tr and vat modes against the sandbox register', () => {
  it('finds each company by its exact name and address with score 100 as the best hit', async () => {
    const results = await run(
      'company',
      active.map((c) => ({ company: c.company, zip: c.zip, city: c.city, street: c.street })),
    );
    results.forEach((r, i) => {
      expect(r.status).toBe('accepted');
      expect(r.company).toMatchObject({ id: active[i]?.id, searchMethod: 'company', searchScore: 100 });
      expect(r.hits).toBeGreaterThanOrEqual(1);
    });
  });

  it("reports the X-Total-Count of a search as the record's hits, bounded by the configured limit", async () => {
    const [r] = await run('company', [{ company: 'Müller' }], { company: { minScore: 50, limit: 5 } });
    expect(r).toMatchObject({ hits: 5 });
  });

  it('sends a name matching two companies, without an address, to review with both hits kept; the zip picks one', async () => {
    const [a, b] = twins as [(typeof register)[number], (typeof register)[number]];
    const [byName, byNameAndZip] = await run('company', [{ company: a.company }, { company: b.company, zip: b.zip }]);
    expect(byName).toMatchObject({ status: 'review' });
    // Both score 100 and come first; companies with similar names may follow.
    expect(
      byName?.companies
        ?.slice(0, 2)
        .map((c) => c.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    expect(byName?.hits).toBe(byName?.companies?.length);
    expect(byName?.company?.id).toBe(byName?.companies?.[0]?.id);
    expect(byNameAndZip).toMatchObject({ status: 'accepted', company: { id: b.id, searchScore: 100 } });
    expect(byNameAndZip?.companies).toBeUndefined();
  });

  it('finds each company by court, register type and number (searchMethod tr)', async () => {
    const results = await run(
      'tr',
      active.map((c) => ({ trCourt: c.trCourt, trType: c.trType, trNo: c.trNo })),
    );
    results.forEach((r, i) => {
      expect(r.status).toBe('accepted');
      expect(r.company).toMatchObject({ id: active[i]?.id, trNo: active[i]?.trNo, searchMethod: 'tr' });
    });
  });

  it('returns a liquidated company only when includeDeleted is set', async () => {
    const record = { trCourt: inactive.trCourt, trType: inactive.trType, trNo: inactive.trNo };
    const [hidden] = await run('tr', [record]);
    expect(hidden).toMatchObject({ status: 'invalid', hits: 0 });
    const [shown] = await run('tr', [record], { company: { includeDeleted: true } });
    expect(shown).toMatchObject({ status: 'accepted', company: { id: inactive.id, trStatus: 'inactive' } });
  });

  it('answers VALID_VAT_ID for a correct VAT ID of each country, INVALID_VAT_ID for a wrong check digit, and invalid-input for an unknown prefix', async () => {
    const valid = VAT_COUNTRIES.map((country, n) => makeVatId(country, 1000 + n));
    // One digit of the number changed (for NL the one before the B01 suffix): the check digits no longer fit.
    const broken = valid.map((id) => {
      const at = /B\d\d$/.test(id) ? id.length - 4 : id.length - 1;
      return id.slice(0, at) + String((Number(id[at]) + 1) % 10) + id.slice(at + 1);
    });
    const results = await run(
      'vat',
      [...valid, ...broken, 'US123456789'].map((vatId) => ({ vatId })),
    );
    expect(results.slice(0, valid.length).map((r) => r.vatCode)).toEqual(valid.map(() => 'VALID_VAT_ID'));
    expect(results.slice(0, valid.length).every((r) => r.status === 'accepted')).toBe(true);
    expect(results.slice(valid.length, -1).map((r) => r.vatCode)).toEqual(broken.map(() => 'INVALID_VAT_ID'));
    expect(results.slice(valid.length, -1).every((r) => r.status === 'invalid')).toBe(true);
    expect(results.at(-1)).toMatchObject({ status: 'invalid-input', error: { code: 'company-bad-request' } });
  });
});

describe('CompanyClient against the sandbox', () => {
  it('reads X-Total-Count and gets hits in descending score order', async () => {
    const transport = transportOn(sandbox);
    try {
      const res = await new CompanyClient(transport).company({ company: 'Müller' }, { minScore: 50, limit: 10 });
      expect(res.totalCount).toBe(10);
      expect(res.headers['x-total-count']).toBe('10');
      const scores = res.data.companies.map((c) => c.searchScore);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    } finally {
      await transport.close();
    }
  });

  it('pages through a search with offset and limit, getting the same hits as one large page', async () => {
    const transport = transportOn(sandbox);
    try {
      const client = new CompanyClient(transport);
      const before = requestsTo(sandbox, 'company');
      const paged = await client.all('company', { company: 'Müller' }, { minScore: 50 }, { pageSize: 10 });
      const pages = requestsTo(sandbox, 'company') - before;
      const whole = await client.company({ company: 'Müller' }, { minScore: 50, limit: 50 });
      expect(whole.totalCount).toBeGreaterThan(10);
      expect(whole.totalCount).toBeLessThan(50);
      expect(paged.map((c) => c.id)).toEqual(whole.data.companies.map((c) => c.id));
      expect(pages).toBe(Math.ceil(whole.totalCount / 10) + (whole.totalCount % 10 === 0 ? 1 : 0));
    } finally {
      await transport.close();
    }
  });
});
