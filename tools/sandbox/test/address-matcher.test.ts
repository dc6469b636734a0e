import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createAddressMatcher, generateDirtyInputs } from '../src/address/index.js';
import type { AddressInput, Candidate, ResultClass } from '../src/address/index.js';

const matcher = createAddressMatcher();
const NONE: ReadonlySet<string> = new Set();
const ALL: ReadonlySet<string> = new Set(['coordinates-wgs84', 'metadata']);

describe('the matching engine on a labelled set of generated dirty inputs', () => {
  const labelled = generateDirtyInputs(800, { seed: 20240601 });

  it('covers every result class with a fair share of the set', () => {
    const perClass = new Map<ResultClass, number>();
    for (const item of labelled) perClass.set(item.intendedClass, (perClass.get(item.intendedClass) ?? 0) + 1);
    for (const resultClass of ['A', 'B', 'C', 'D', 'E', 'F'] as const) {
      expect(perClass.get(resultClass) ?? 0, `inputs meant for class ${resultClass}`).toBeGreaterThanOrEqual(30);
    }
    expect(new Set(labelled.map((item) => item.variant.split('+')[1] ?? 'fields'))).toEqual(new Set(['fields', 'address-line', 'locality-line', 'both-lines']));
  });

  it('agrees with the intended class for at least 95 % of the inputs', () => {
    const misses = labelled.filter((item) => matcher.validate(item.input, NONE).resultClass !== item.intendedClass);
    const agreement = 1 - misses.length / labelled.length;
    expect(agreement, JSON.stringify(misses.slice(0, 3))).toBeGreaterThanOrEqual(0.95);
  });

  it('returns exactly the true address for every A, B and C result', () => {
    const wrong: unknown[] = [];
    for (const item of labelled) {
      const result = matcher.validate(item.input, NONE);
      if (!['A', 'B', 'C'].includes(result.resultClass)) continue;
      if (result.results.length !== 1 || !isDeepStrictEqual(result.results[0], item.truth)) {
        wrong.push({ variant: item.variant, input: item.input, truth: item.truth, got: result });
      }
    }
    expect(wrong).toEqual([]);
  });

  it('gives the known truth as the single candidate of every class D result it intended', () => {
    for (const item of labelled.filter((i) => i.intendedClass === 'D')) {
      const result = matcher.validate(item.input, NONE);
      expect(result.results, item.variant).toEqual([item.truth]);
    }
  });

  it('answers E with several candidates that differ in postal code, and F with an empty list', () => {
    for (const item of labelled) {
      const result = matcher.validate(item.input, NONE);
      if (result.resultClass === 'E') {
        expect(result.results.length, item.variant).toBeGreaterThan(1);
        expect(new Set(result.results.map((c) => `${c.postalCode}|${c.street}`)).size).toBe(result.results.length);
      }
      if (result.resultClass === 'F') expect(result.results).toEqual([]);
    }
  });
});

describe('input variants', () => {
  const addresses = generateDirtyInputs(300, { seed: 77 }).filter((item) => item.intendedClass !== 'F' && item.truth);

  function variants(c: Candidate): AddressInput[] {
    const line = c.houseNumber === '' ? c.street : `${c.street} ${c.houseNumber}`;
    const place = `${c.postalCode} ${c.locality}`;
    const house = c.houseNumber === '' ? {} : { houseNumber: c.houseNumber };
    return [
      { country: c.country, street: c.street, ...house, postalCode: c.postalCode, locality: c.locality },
      { country: c.country, addressLine: line, postalCode: c.postalCode, locality: c.locality },
      { country: c.country, street: c.street, ...house, localityLine: place },
      { country: c.country, addressLine: line, localityLine: place },
    ];
  }

  it('street + houseNumber, addressLine and localityLine give the same class and candidates', () => {
    for (const { truth } of addresses) {
      const results = variants(truth as Candidate).map((input) => matcher.validate(input, ALL));
      const [first] = results;
      for (const result of results) {
        expect(result.resultClass).toBe(first?.resultClass);
        const withoutMeta = result.results.map(({ _meta, ...rest }) => rest);
        expect(withoutMeta).toEqual(first?.results.map(({ _meta, ...rest }) => rest));
        for (const candidate of result.results) expect(candidate._meta?.fields.country?.status).toBe('IDENTIFIED');
      }
    }
  });

  it('names the input fields the caller used in _meta', () => {
    const truth = addresses[0]?.truth as Candidate;
    const [fields, , , lines] = variants(truth).map((input) => matcher.validate(input, ALL).results[0]?._meta?.fields ?? {});
    expect(Object.keys(fields ?? {}).sort()).toEqual(['country', 'houseNumber', 'locality', 'postalCode', 'street']);
    expect(Object.keys(lines ?? {}).sort()).toEqual(['addressLine', 'country', 'localityLine']);
  });
});

describe('determinism', () => {
  it('generates the same inputs for the same seed and different ones for another seed', () => {
    expect(generateDirtyInputs(200, { seed: 5 })).toEqual(generateDirtyInputs(200, { seed: 5 }));
    expect(generateDirtyInputs(200, { seed: 5 }).slice(0, 50)).toEqual(generateDirtyInputs(50, { seed: 5 }));
    expect(generateDirtyInputs(50, { seed: 6 })).not.toEqual(generateDirtyInputs(50, { seed: 5 }));
  });

  it('keeps to one country when asked and refuses a country without reference data', () => {
    expect(new Set(generateDirtyInputs(100, { seed: 3, country: 'AT' }).map((item) => item.input.country))).toEqual(new Set(['AT']));
    expect(() => generateDirtyInputs(1, { country: 'FR' })).toThrow(expect.objectContaining({ code: 'country-not-available' }));
  });

  it('gives identical answers from two matchers, whatever seed they were given', () => {
    const other = createAddressMatcher({ seed: 99 });
    for (const { input } of generateDirtyInputs(200, { seed: 11 })) {
      expect(other.validate(input, ALL)).toEqual(matcher.validate(input, ALL));
    }
  });
});

describe('speed', () => {
  it('validates 10,000 addresses in less than a second', () => {
    const inputs = generateDirtyInputs(10_000, { seed: 9 }).map((item) => item.input);
    for (const input of inputs.slice(0, 2_000)) matcher.validate(input, ALL);
    // Fastest of three runs: other processes share the two cores, and only the engine's own cost is asserted.
    let fastest = Infinity;
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      for (const input of inputs) matcher.validate(input, ALL);
      fastest = Math.min(fastest, performance.now() - started);
    }
    expect(fastest).toBeLessThan(1_000);
  });
});
