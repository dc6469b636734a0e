import { describe, expect, it } from 'vitest';
import { createCompanyService, type CompanyHit, type CompanyRecord } from '../src/company/index.js';

const service = createCompanyService({ seed: 7 });
const { companies } = service;

function lookup(params: Record<string, string>, body: unknown): { status: number; hits: CompanyHit[]; totalCount?: number } {
  const response = service.handle(new URLSearchParams({ searchMethod: 'tr', ...params }), body, '/companies/v2');
  return { status: response.status, hits: (response.body as { companies?: CompanyHit[] }).companies ?? [], totalCount: response.totalCount };
}

describe('the register', () => {
  it('holds 5000 companies by default, the same ones for the same seed and others for another seed', () => {
    expect(companies).toHaveLength(5000);
    expect(createCompanyService({ seed: 7 }).companies).toEqual(companies);
    const other = createCompanyService({ seed: 8 }).companies;
    expect(other.slice(7, 50).map((c) => c.company)).not.toEqual(companies.slice(7, 50).map((c) => c.company));
  });

  it('honours the size option', () => {
    expect(createCompanyService({ size: 12_000 }).companies).toHaveLength(12_000);
  });

  it('has records with exactly the fields of contract 2.3 and unique ascending ids', () => {
    for (const c of companies) {
      expect(Object.keys(c).sort()).toEqual(['city', 'company', 'id', 'street', 'trCourt', 'trNo', 'trStatus', 'trType', 'zip']);
      expect(Number.isInteger(c.id) && Number.isInteger(c.zip) && Number.isInteger(c.trNo)).toBe(true);
      expect(c.street).toMatch(/ \d+[a-c]?$/);
      expect(c.trCourt).toMatch(/^Amtsgericht /);
    }
    const ids = companies.map((c) => c.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('files corporations under HRB and partnerships and merchants under HRA', () => {
    for (const c of companies) {
      const partnership = / (KG|OHG|e\.K\.)$/.test(c.company);
      expect(c.trType, c.company).toBe(partnership ? 'HRA' : 'HRB');
    }
  });

  it('gives every (court, type, number) to one company only', () => {
    const entries = new Set(companies.map((c) => `${c.trCourt}|${c.trType}|${c.trNo}`));
    expect(entries.size).toBe(companies.length);
  });

  it('marks about one company in ten inactive', () => {
    const share = companies.filter((c) => c.trStatus === 'inactive').length / companies.length;
    expect(share).toBeGreaterThan(0.07);
    expect(share).toBeLessThan(0.13);
  });

  it('spreads companies over many real register courts', () => {
    const courts = new Set(companies.map((c) => c.trCourt));
    expect(courts.size).toBeGreaterThanOrEqual(30);
    for (const court of ['Amtsgericht Charlottenburg', 'Amtsgericht München', 'Amtsgericht Hamburg', 'Amtsgericht Köln', 'Amtsgericht Frankfurt am Main']) {
      expect(courts.has(court), court).toBe(true);
    }
  });
});

describe('register lookup (searchMethod tr)', () => {
  const target = companies.find((c) => c.trStatus === 'active' && c.trCourt === 'Amtsgericht München' && c.id > 1_000_000) as CompanyRecord;

  it('finds the entry by court, type and number with score 100', () => {
    const { status, hits, totalCount } = lookup({}, { trCourt: target.trCourt, trType: target.trType, trNo: target.trNo });
    expect(status).toBe(200);
    expect(hits).toEqual([{ ...target, searchMethod: 'tr', searchScore: 100 }]);
    expect(totalCount).toBe(1);
  });

  it('accepts the register number as a string and the type in any case', () => {
    const { hits } = lookup({}, { trCourt: target.trCourt, trType: target.trType.toLowerCase(), trNo: String(target.trNo) });
    expect(hits.map((h) => h.id)).toEqual([target.id]);
  });

  it('tolerates spelling variants of the court with a lower score', () => {
    const variants: Array<[string, number]> = [
      ['amtsgericht münchen', 99],
      ['Amtsgericht Muenchen', 99],
      ['AG München', 95],
      ['Munchen', 95],
    ];
    for (const [trCourt, score] of variants) {
      const { hits } = lookup({}, { trCourt, trType: target.trType, trNo: target.trNo });
      expect(hits, trCourt).toEqual([{ ...target, searchMethod: 'tr', searchScore: score }]);
    }
  });

  it('knows the usual names of the Berlin and Frankfurt courts', () => {
    for (const trCourt of ['Amtsgericht Berlin-Charlottenburg', 'Berlin (Charlottenburg)']) {
      expect(
        lookup({}, { trCourt, trType: 'HRB', trNo: 154_321 }).hits.map((h) => h.id),
        trCourt,
      ).toEqual([900_006]);
    }
    for (const trCourt of ['Frankfurt a.M.', 'Frankfurt/Main']) {
      expect(
        lookup({}, { trCourt, trType: 'HRA', trNo: 20_123 }).hits.map((h) => h.id),
        trCourt,
      ).toEqual([900_004]);
    }
  });

  it('scores a misspelt court below the variants and lets minScore drop it', () => {
    const body = { trCourt: 'Amtsgericht Charlotenburg', trType: 'HRB', trNo: 154_321 };
    const score = lookup({}, body).hits[0]?.searchScore ?? 0;
    expect(score).toBeGreaterThanOrEqual(85);
    expect(score).toBeLessThan(95);
    expect(lookup({ minScore: '95' }, body).hits).toEqual([]);
  });

  it('finds nothing under another court, type or number', () => {
    const wrong = [
      { trCourt: 'Amtsgericht Hamburg', trType: target.trType, trNo: target.trNo },
      { trCourt: target.trCourt, trType: target.trType === 'HRA' ? 'HRB' : 'HRA', trNo: target.trNo },
      { trCourt: target.trCourt, trType: target.trType, trNo: 999_999_999 },
    ];
    for (const body of wrong) expect(lookup({}, body)).toEqual({ status: 200, hits: [], totalCount: 0 });
  });

  it('returns an inactive entry only with includeDeleted=true', () => {
    const body = { trCourt: 'Amtsgericht Charlottenburg', trType: 'HRB', trNo: 98_765 };
    expect(lookup({}, body).hits).toEqual([]);
    expect(lookup({ includeDeleted: 'true' }, body).hits).toMatchObject([{ id: 900_005, trStatus: 'inactive', searchScore: 100 }]);
  });
});
