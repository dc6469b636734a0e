import { describe, expect, it } from 'vitest';
import { createCompanyService, type CompanyHit, type CompanyRecord } from '../src/company/index.js';

const service = createCompanyService();

function search(params: Record<string, string>, body: unknown): { status: number; hits: CompanyHit[]; totalCount?: number } {
  const response = service.handle(new URLSearchParams(params), body, '/companies/v2');
  const payload = response.body as { companies?: CompanyHit[] };
  return { status: response.status, hits: payload.companies ?? [], totalCount: response.totalCount };
}

function byName(name: string): CompanyRecord[] {
  return service.companies.filter((c) => c.company === name);
}

/** Active companies whose name occurs once in the register, so a search has one right answer. */
const uniqueActive = service.companies.filter((c) => c.trStatus === 'active' && byName(c.company).length === 1);

describe('company search (searchMethod company)', () => {
  it('scores 100 when name and address are exactly those of the hit', () => {
    const target = uniqueActive[10] as CompanyRecord;
    const { status, hits, totalCount } = search(
      {},
      {
        company: target.company,
        zip: target.zip,
        city: target.city,
        street: target.street,
      },
    );
    expect(status).toBe(200);
    expect(hits[0]).toEqual({ ...target, searchMethod: 'company', searchScore: 100 });
    expect(totalCount).toBe(hits.length);
  });

  it('finds a company from a misspelt name with a score below 100 but above the default minScore', () => {
    const { hits } = search({}, { company: 'Müller Maschinebau GmbH' });
    const hit = hits.find((h) => h.id === 900_001);
    expect(hit?.company).toBe('Müller Maschinenbau GmbH');
    expect(hit?.searchScore).toBeLessThan(100);
    expect(hit?.searchScore).toBeGreaterThanOrEqual(85);
  });

  it('treats swapped letters in a name as one typo', () => {
    const { hits } = search({ minScore: '80' }, { company: 'Schmdit & Partner KG', city: 'Hamburg' });
    expect(hits[0]?.id).toBe(900_002);
  });

  it('reads umlaut spellings, case and legal-form spellings as the same name, just below 100', () => {
    for (const spelling of ['Mueller Maschinenbau G.m.b.H.', 'MÜLLER MASCHINENBAU GMBH', 'Müller Maschinenbau Gesellschaft mit beschränkter Haftung']) {
      const { hits } = search({}, { company: spelling });
      expect(hits[0], spelling).toMatchObject({ id: 900_001, searchScore: 99 });
    }
  });

  it('scores a name given without its legal form lower than the full name', () => {
    const full = search({}, { company: 'Bäckerei Weber e.K.' }).hits[0];
    const bare = search({}, { company: 'Bäckerei Weber' }).hits[0];
    expect(full).toMatchObject({ id: 900_003, searchScore: 100 });
    expect(bare?.id).toBe(900_003);
    expect(bare?.searchScore).toBeLessThan(100);
  });

  it('matches a postcode with its leading zero against the register number', () => {
    const { hits } = search({}, { company: 'Sachsen Verpackungen AG', zip: '04103', city: 'Leipzig' });
    expect(hits[0]).toMatchObject({ id: 900_007, zip: 4103, searchScore: 100 });
  });

  it('lowers the score when the address does not fit, so the right branch ranks first', () => {
    const target = uniqueActive[20] as CompanyRecord;
    const right = search({ minScore: '1' }, { company: target.company, city: target.city, zip: target.zip }).hits[0];
    const wrong = search({ minScore: '1' }, { company: target.company, city: 'Flensburg', zip: 24937 }).hits.find((h) => h.id === target.id);
    expect(right?.searchScore).toBe(100);
    expect(wrong?.searchScore).toBeLessThan(90);
  });

  it('returns hits in descending score order and none below minScore', () => {
    const { hits } = search({ minScore: '60' }, { company: 'Schmidt Logistik GmbH' });
    expect(hits.length).toBeGreaterThan(3);
    const scores = hits.map((h) => h.searchScore);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(Math.min(...scores)).toBeGreaterThanOrEqual(60);
  });

  it('answers no hit with status 200, an empty list and X-Total-Count 0', () => {
    const result = search({}, { company: 'Quantenverschränkung Zyxw' });
    expect(result).toEqual({ status: 200, hits: [], totalCount: 0 });
  });

  it('returns inactive companies only with includeDeleted=true', () => {
    const name = { company: 'Hoffmann Elektrotechnik GmbH', city: 'Berlin' };
    const active = search({}, name).hits.filter((h) => h.company === name.company);
    const all = search({ includeDeleted: 'true' }, name).hits.filter((h) => h.company === name.company);
    expect(active.map((h) => h.id)).toEqual([900_006]);
    expect(all.map((h) => h.id).sort()).toEqual([900_005, 900_006]);
    expect(all.find((h) => h.id === 900_005)?.trStatus).toBe('inactive');
    expect(search({}, { company: 'Hoffmann Elektrotechnik GmbH' }).hits.every((h) => h.trStatus === 'active')).toBe(true);
  });
});

describe('paging with limit and offset', () => {
  const query = { company: 'Schmidt Maschinenbau GmbH' };
  const all = search({ minScore: '40' }, query).hits;

  it('has a list long enough to page through, capped at 50 hits', () => {
    expect(all.length).toBe(50);
  });

  it('returns consecutive slices of the same ordered list, with X-Total-Count the page length', () => {
    const pages = [0, 20, 40].map((offset) => search({ minScore: '40', limit: '20', offset: String(offset) }, query));
    expect(pages.map((p) => p.totalCount)).toEqual([20, 20, 10]);
    expect(pages.flatMap((p) => p.hits.map((h) => h.id))).toEqual(all.map((h) => h.id));
  });

  it('returns an empty page past the end of the list', () => {
    expect(search({ minScore: '40', offset: '50' }, query)).toMatchObject({ status: 200, hits: [], totalCount: 0 });
  });

  it('returns at most limit hits', () => {
    expect(search({ minScore: '40', limit: '1' }, query).hits.map((h) => h.id)).toEqual([all[0]?.id]);
  });
});

describe('search speed', () => {
  it('answers a fuzzy name search in well under a millisecond (median of 600)', () => {
    const names = service.companies.slice(0, 200).map((c) => c.company.replace(/e/, 'ee'));
    const times: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const company of names) {
        const started = performance.now();
        search({}, { company });
        times.push(performance.now() - started);
      }
    }
    times.sort((a, b) => a - b);
    expect(times[times.length >> 1]).toBeLessThan(1);
  });
});
