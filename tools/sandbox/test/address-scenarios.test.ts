import { describe, expect, it } from 'vitest';
import { createAddressMatcher } from '../src/address/index.js';
import type { AddressInput } from '../src/address/index.js';
import { referenceData } from '../src/address/reference-data.js';
import type { RefStreet, RefTown } from '../src/address/reference-data.js';

const matcher = createAddressMatcher();
const NONE: ReadonlySet<string> = new Set();
const META: ReadonlySet<string> = new Set(['metadata']);
const COORDS: ReadonlySet<string> = new Set(['coordinates-wgs84']);

function town(name: string): RefTown {
  const found = referenceData()
    .townsByCountry.get('DE')
    ?.find((t) => t.name === name);
  if (!found) throw new Error(`no reference town ${name}`);
  return found;
}
function street(t: RefTown, name: string): RefStreet {
  const found = t.streets.find((s) => s.name === name);
  if (!found) throw new Error(`no reference street ${name} in ${t.name}`);
  return found;
}

// Königsallee, Düsseldorf: a signature street that starts in its real postal area 40212.
const duesseldorf = town('Düsseldorf');
const koe = street(duesseldorf, 'Königsallee');
const koeSide = koe.segments.find((s) => s.postalCode === '40212' && s.step === 'odd');
const exact: AddressInput = { country: 'DE', street: 'Königsallee', houseNumber: '1', postalCode: '40212', locality: 'Düsseldorf' };

describe('result classes on hand-written inputs', () => {
  it('returns an identical address as class A with the address as given', () => {
    expect(koeSide?.from).toBe(1);
    const result = matcher.validate(exact, META);
    expect(result.resultClass).toBe('A');
    expect(result.results).toHaveLength(1);
    expect(result.results[0]).toMatchObject({
      addressType: 'delivery',
      country: 'DE',
      postalCode: '40212',
      locality: 'Düsseldorf',
      subLocality: 'Stadtmitte',
      street: 'Königsallee',
      houseNumber: '1',
    });
    expect(Object.values(result.results[0]?._meta?.fields ?? {}).every((f) => f.status === 'IDENTIFIED')).toBe(true);
  });

  it.each([
    ['upper case', { street: 'KÖNIGSALLEE' }],
    ['umlaut transcribed', { street: 'Koenigsallee', locality: 'Duesseldorf' }],
    ['stray spaces', { street: ' Königsallee ', locality: 'Düsseldorf  ' }],
    ['a house-number letter in capitals', { houseNumber: '1 A' }],
    ['a localityLine with a country prefix', { postalCode: undefined, locality: undefined, localityLine: 'D-40212 Düsseldorf' }],
  ])('returns class B for %s, marking the field NORMALIZED', (_label, change) => {
    const result = matcher.validate({ ...exact, ...change }, META);
    expect(result.resultClass).toBe('B');
    expect(result.results[0]).toMatchObject({ street: 'Königsallee', postalCode: '40212', locality: 'Düsseldorf' });
    expect(Object.values(result.results[0]?._meta?.fields ?? {}).some((f) => f.status === 'NORMALIZED')).toBe(true);
  });

  it('accepts "str." and "strasse" for "straße" as normalisation', () => {
    const schadow = street(duesseldorf, 'Schadowstraße');
    const number = String(schadow.segments[0]?.from);
    const code = schadow.segments[0]?.postalCode as string;
    for (const spelling of ['Schadowstr.', 'Schadowstrasse', 'schadow-straße']) {
      const result = matcher.validate({ country: 'DE', street: spelling, houseNumber: number, postalCode: code, locality: 'Düsseldorf' }, NONE);
      expect(result.resultClass, spelling).toBe('B');
      expect(result.results[0]?.street).toBe('Schadowstraße');
    }
  });

  it('corrects a wrong postal code from street, number and town as class C', () => {
    const result = matcher.validate({ ...exact, postalCode: '40545' }, META);
    expect(result.resultClass).toBe('C');
    expect(result.results[0]?.postalCode).toBe('40212');
    expect(result.results[0]?._meta?.fields.postalCode?.status).toBe('CORRECTED');
    expect(result.results[0]?._meta?.fields.street?.status).toBe('IDENTIFIED');
  });

  it('corrects a one-letter typo in the street as class C', () => {
    const result = matcher.validate({ ...exact, street: 'Königsalle' }, META);
    expect(result.resultClass).toBe('C');
    expect(result.results[0]?.street).toBe('Königsallee');
    expect(result.results[0]?._meta?.fields.street?.status).toBe('CORRECTED');
  });

  it('gives class D for two corrections and for a house number beyond the street', () => {
    expect(matcher.validate({ ...exact, street: 'Königsalle', postalCode: '40545' }, NONE).resultClass).toBe('D');
    const beyond = matcher.validate({ ...exact, houseNumber: String(koe.maxNumber + 51) }, META);
    expect(beyond.resultClass).toBe('D');
    expect(beyond.results[0]?._meta?.fields.houseNumber?.status).toBe('UNVERIFIED');
  });

  it('returns class F with no candidates for an unknown street or town', () => {
    expect(matcher.validate({ ...exact, street: 'Zypressenpfad' }, NONE)).toEqual({ resultClass: 'F', results: [] });
    expect(matcher.validate({ ...exact, postalCode: '99999', locality: 'Unterzwiebelbrunn' }, NONE)).toEqual({ resultClass: 'F', results: [] });
  });

  it('throws country-not-available for a country without reference data', () => {
    expect(matcher.countries).toEqual(expect.arrayContaining(['DE', 'AT']));
    expect(() => matcher.validate({ ...exact, country: 'FR' }, NONE)).toThrow(expect.objectContaining({ code: 'country-not-available' }));
  });
});

describe('streets that cross postal areas', () => {
  const crossing = referenceData()
    .townsByCountry.get('DE')
    ?.flatMap((t) => t.streets)
    .find((s) => s.postalCodes.length >= 2 && (s.town.streetsByKey.get(s.key)?.length ?? 0) === 1) as RefStreet;
  const [first, second] = crossing.postalCodes as [string, string];
  const inSecond = crossing.segments.find((s) => s.postalCode === second);
  const elsewhere = crossing.town.postalCodes.find((c) => !crossing.postalCodes.includes(c));

  it('resolves the postal code by house number (class C when the given one belongs to another part)', () => {
    const input = { country: 'DE', street: crossing.name, houseNumber: String(inSecond?.from), postalCode: first, locality: crossing.town.name };
    const result = matcher.validate(input, NONE);
    expect(result.resultClass).toBe('C');
    expect(result.results[0]?.postalCode).toBe(second);
  });

  it('offers one candidate per postal area with house-number ranges when no number is given (class E)', () => {
    if (elsewhere === undefined) throw new Error('fixture town needs a postal code outside the street');
    const result = matcher.validate({ country: 'DE', street: crossing.name, postalCode: elsewhere, locality: crossing.town.name }, COORDS);
    expect(result.resultClass).toBe('E');
    expect(result.results.map((c) => c.postalCode).sort()).toEqual([...crossing.postalCodes].sort());
    for (const candidate of result.results) {
      expect(candidate.houseNumber).toBe('');
      expect(candidate.houseNumberChoice?.length).toBeGreaterThan(0);
      for (const range of candidate.houseNumberChoice ?? []) {
        expect(Number(range.from) % 2).toBe(range.step === 'odd' ? 1 : 0);
        expect(Number(range.to) % 2).toBe(range.step === 'odd' ? 1 : 0);
      }
      expect(candidate.coordinates?.wgs84.precision).toBe('house-number-range');
    }
  });
});

describe('coordinates', () => {
  it('places house numbers along the street near the town centre, only when asked', () => {
    expect(matcher.validate(exact, NONE).results[0]?.coordinates).toBeUndefined();
    const one = matcher.validate(exact, COORDS).results[0]?.coordinates?.wgs84;
    const far = matcher.validate({ ...exact, houseNumber: String(koeSide?.to) }, COORDS).results[0]?.coordinates?.wgs84;
    expect(one?.precision).toBe('house-number');
    const km = (a: { lat: number; lon: number }, b: { lat: number; lon: number }): number =>
      Math.hypot((a.lat - b.lat) * 111.32, (a.lon - b.lon) * 111.32 * Math.cos((a.lat * Math.PI) / 180));
    expect(km(one as { lat: number; lon: number }, duesseldorf.centre)).toBeLessThan(12);
    const length = km(one as { lat: number; lon: number }, far as { lat: number; lon: number });
    expect(length).toBeGreaterThan(0.05);
    expect(length).toBeLessThan(2);
  });
});
