import { describe, expect, it } from 'vitest';
import { createAddressMatcher } from '../src/address/index.js';
import { referenceData } from '../src/address/reference-data.js';

describe('reference data', () => {
  const data = referenceData();
  const de = data.townsByCountry.get('DE') ?? [];
  const at = data.townsByCountry.get('AT') ?? [];

  it('holds real German and Austrian towns with their postal codes', () => {
    expect(de.length).toBeGreaterThanOrEqual(40);
    expect(de.find((t) => t.name === 'Berlin')?.postalCodes).toEqual(expect.arrayContaining(['10115', '10117', '10961']));
    expect(de.find((t) => t.name === 'München')?.postalCodes).toContain('80331');
    expect(at.find((t) => t.name === 'Wien')?.postalCodes).toEqual(expect.arrayContaining(['1010', '1070']));
    for (const t of de) for (const code of t.postalCodes) expect(code).toMatch(/^\d{5}$/);
    for (const t of at) for (const code of t.postalCodes) expect(code).toMatch(/^\d{4}$/);
  });

  it('gives every street odd and even sides whose ranges keep their parity', () => {
    for (const street of [...de, ...at].flatMap((t) => t.streets)) {
      expect(new Set(street.segments.map((s) => s.step))).toEqual(new Set(['odd', 'even']));
      for (const s of street.segments) {
        expect(s.from % 2).toBe(s.step === 'odd' ? 1 : 0);
        expect(s.to % 2).toBe(s.step === 'odd' ? 1 : 0);
        expect(s.from).toBeLessThanOrEqual(s.to);
      }
    }
  });

  it('has streets crossing postal areas, namesakes within a town, and names with ß and umlauts', () => {
    const streets = de.flatMap((t) => t.streets);
    expect(streets.filter((s) => s.postalCodes.length > 1).length).toBeGreaterThan(100);
    expect(de.some((t) => [...t.streetsByKey.values()].some((list) => list.length > 1))).toBe(true);
    expect(streets.some((s) => s.name.includes('ß'))).toBe(true);
    expect(streets.some((s) => /[äöü]/.test(s.name))).toBe(true);
  });
});

describe('autocomplete', () => {
  const matcher = createAddressMatcher();

  it('completes a street prefix with a house number to the address on that side of the street', () => {
    const { results } = matcher.autocomplete({ country: 'DE', query: 'Königsall 1 Düss' });
    expect(results[0]).toMatchObject({ street: 'Königsallee', houseNumber: '1', postalCode: '40212', locality: 'Düsseldorf' });
  });

  it('returns at most ten candidates, all of the session country', () => {
    const { results } = matcher.autocomplete({ country: 'AT', query: 'Haupt' });
    expect(results.length).toBe(10);
    for (const candidate of results) expect(candidate.country).toBe('AT');
  });

  it('filters by structured postal code and offers house-number ranges without a number', () => {
    const { results } = matcher.autocomplete({ country: 'DE', street: 'Königsallee', postalCode: '40212' }, new Set(['coordinates-wgs84']));
    expect(results).toHaveLength(1);
    expect(results[0]?.houseNumberChoice?.length).toBeGreaterThan(0);
    expect(results[0]?.coordinates?.wgs84.precision).toBeDefined();
  });

  it('finds nothing for a street that does not exist', () => {
    expect(matcher.autocomplete({ country: 'DE', query: 'Zypressenpfad' }).results).toEqual([]);
  });
});
