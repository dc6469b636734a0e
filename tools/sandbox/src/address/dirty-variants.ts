/** The mistakes generateDirtyInputs makes, each with the class the matcher should give it. */
import { referenceMatch, toCandidate } from './candidate.js';
import type { CountryIndex } from './country-index.js';
import { eszettAsSs, extraSpaces, inventedStreet, inventedTown, oneTypo, umlautsTranscribed } from './dirty-edits.js';
import { boundedEditDistance, typoTolerance } from './edit-distance.js';
import { normaliseKey } from './normalise.js';
import type { Random } from '../prng.js';
import type { RefSegment, RefStreet, RefTown } from './reference-data.js';
import type { Candidate, ResultClass } from './types.js';

/** A reference address picked at random: a street, one side's segment and a number on it. */
export interface Picked {
  index: CountryIndex;
  town: RefTown;
  street: RefStreet;
  segment: RefSegment;
  number: number;
}

export interface Draft {
  fields: { street: string; houseNumber: string; postalCode: string; locality: string };
  intendedClass: ResultClass;
  truth?: Candidate;
  /** Forces a presentation, e.g. a missing postal code is only expressible in a localityLine. */
  presentation?: 'locality-line';
}

const NONE: ReadonlySet<string> = new Set();

function truthOf(street: RefStreet, postalCode: string, house: number | string | undefined): Candidate {
  if (house === undefined) {
    return toCandidate(
      referenceMatch(
        street,
        postalCode,
        undefined,
        street.segments.filter((s) => s.postalCode === postalCode),
      ),
      NONE,
    );
  }
  const text = String(house);
  return toCandidate(referenceMatch(street, postalCode, { text, value: Number.parseInt(text, 10) }), NONE);
}

function base(p: Picked): Draft['fields'] {
  return { street: p.street.name, houseNumber: String(p.number), postalCode: p.segment.postalCode, locality: p.town.name };
}

function exactDraft(p: Picked, intendedClass: ResultClass, fields: Partial<Draft['fields']>): Draft {
  return { fields: { ...base(p), ...fields }, intendedClass, truth: truthOf(p.street, p.segment.postalCode, p.number) };
}

const contains = (street: RefStreet, n: number): boolean => street.segments.some((s) => s.step === (n % 2 === 1 ? 'odd' : 'even') && s.from <= n && n <= s.to);
const namesakes = (p: Picked): RefStreet[] => (p.town.streetsByKey.get(p.street.key) ?? []).filter((s) => s !== p.street);
/** True when no other street of the same name in the town has the picked number (else the result is E). */
const unambiguous = (p: Picked): boolean => !namesakes(p).some((s) => contains(s, p.number));
const namesakeCodes = (p: Picked): Set<string> => new Set([p.street, ...namesakes(p)].flatMap((s) => s.postalCodes));

/** Distinct street keys of the town within `max` edits of `key`. */
function streetKeysNear(town: RefTown, key: string, max: number): string[] {
  return [...town.streetsByKey.keys()].filter((k) => boundedEditDistance(key, k, max) <= max);
}

/** The street name with `edits` typos, when the result still points to that street alone. */
function typoStreet(random: Random, p: Picked, edits: 1 | 2): string | undefined {
  let text = p.street.name;
  for (let i = 0; i < edits; i++) text = oneTypo(random, text);
  const key = normaliseKey(text);
  if (boundedEditDistance(key, p.street.key, 3) !== edits || typoTolerance(key) < edits) return undefined;
  const near = streetKeysNear(p.town, key, edits);
  return near.length === 1 && near[0] === p.street.key ? text : undefined;
}

function wrongCode(random: Random, p: Picked, avoid: ReadonlySet<string>): string | undefined {
  const codes = p.town.postalCodes.filter((code) => !avoid.has(code));
  return codes.length === 0 ? undefined : random.pick(codes);
}

type Build = (random: Random, p: Picked) => Draft | undefined;

/** Variants with their relative frequency. */
export const VARIANTS: readonly { name: string; weight: number; build: Build }[] = [
  { name: 'exact', weight: 20, build: (_r, p) => exactDraft(p, 'A', {}) },
  { name: 'upper-case', weight: 4, build: (_r, p) => exactDraft(p, 'B', { street: p.street.name.toUpperCase(), locality: p.town.name.toUpperCase() }) },
  { name: 'lower-case', weight: 4, build: (_r, p) => exactDraft(p, 'B', { street: p.street.name.toLowerCase() }) },
  {
    name: 'eszett-as-ss',
    weight: 4,
    build: (_r, p) =>
      /ß/.test(p.street.name + p.town.name) ? exactDraft(p, 'B', { street: eszettAsSs(p.street.name), locality: eszettAsSs(p.town.name) }) : undefined,
  },
  {
    name: 'umlauts-transcribed',
    weight: 4,
    build: (_r, p) =>
      /[äöüÄÖÜ]/.test(p.street.name + p.town.name)
        ? exactDraft(p, 'B', { street: umlautsTranscribed(p.street.name), locality: umlautsTranscribed(p.town.name) })
        : undefined,
  },
  { name: 'street-abbreviated', weight: 5, build: (_r, p) => (p.street.abbreviation ? exactDraft(p, 'B', { street: p.street.abbreviation }) : undefined) },
  { name: 'extra-spaces', weight: 3, build: (_r, p) => exactDraft(p, 'B', { street: extraSpaces(p.street.name), locality: extraSpaces(p.town.name) }) },
  {
    name: 'house-number-suffix',
    weight: 2,
    build: (_r, p) => ({
      fields: { ...base(p), houseNumber: `${p.number} A` },
      intendedClass: 'B',
      truth: truthOf(p.street, p.segment.postalCode, `${p.number}a`),
    }),
  },
  {
    name: 'locality-alias',
    weight: 1,
    build: (r, p) => {
      const aliases = [p.town.abbreviation].filter((a): a is string => a !== undefined);
      return aliases.length === 0 ? undefined : exactDraft(p, 'B', { locality: r.pick(aliases) });
    },
  },
  {
    name: 'wrong-postal-code',
    weight: 7,
    build: (r, p) => {
      const code = unambiguous(p) ? wrongCode(r, p, namesakeCodes(p)) : undefined;
      return code ? exactDraft(p, 'C', { postalCode: code }) : undefined;
    },
  },
  {
    name: 'crossing-street-wrong-postal-code',
    weight: 4,
    build: (r, p) => {
      const others = p.street.postalCodes.filter((c) => c !== p.segment.postalCode);
      return others.length > 0 && unambiguous(p) ? exactDraft(p, 'C', { postalCode: r.pick(others) }) : undefined;
    },
  },
  {
    name: 'street-typo',
    weight: 7,
    build: (r, p) => {
      const street = typoStreet(r, p, 1);
      return street ? exactDraft(p, 'C', { street }) : undefined;
    },
  },
  {
    name: 'locality-typo',
    weight: 4,
    build: (r, p) => {
      const locality = oneTypo(r, p.town.name);
      const key = normaliseKey(locality);
      const distance = Math.min(...[p.town.key, ...p.town.aliasKeys].map((k) => boundedEditDistance(key, k, 2)));
      if (distance !== 1 || typoTolerance(key) < 1 || p.index.townsByKey.has(key)) return undefined;
      return exactDraft(p, 'C', { locality });
    },
  },
  {
    name: 'postal-code-missing',
    weight: 4,
    build: (_r, p) => (unambiguous(p) ? { ...exactDraft(p, 'C', { postalCode: '' }), presentation: 'locality-line' } : undefined),
  },
  {
    name: 'wrong-postal-code-and-street-typo',
    weight: 3,
    build: (r, p) => {
      const code = unambiguous(p) ? wrongCode(r, p, namesakeCodes(p)) : undefined;
      const street = code ? typoStreet(r, p, 1) : undefined;
      return code && street ? exactDraft(p, 'D', { postalCode: code, street }) : undefined;
    },
  },
  {
    name: 'street-typo-two-edits',
    weight: 3,
    build: (r, p) => {
      const street = typoStreet(r, p, 2);
      return street ? exactDraft(p, 'D', { street }) : undefined;
    },
  },
  {
    name: 'house-number-out-of-range',
    weight: 4,
    build: (r, p) => {
      // Beyond the highest number of every namesake, on the side that reaches furthest.
      const last = p.street.segments.reduce((a, b) => (b.to > a.to ? b : a));
      const ceiling = Math.max(...[p.street, ...namesakes(p)].map((s) => s.maxNumber));
      const number = ceiling + (ceiling % 2 === last.to % 2 ? 0 : 1) + 2 * r.int(1, 15);
      return {
        fields: { ...base(p), houseNumber: String(number), postalCode: last.postalCode },
        intendedClass: 'D',
        truth: truthOf(p.street, last.postalCode, number),
      };
    },
  },
  {
    name: 'no-house-number',
    weight: 4,
    build: (_r, p) => ({
      fields: { ...base(p), houseNumber: '' },
      intendedClass: 'D',
      truth: truthOf(p.street, p.segment.postalCode, undefined),
    }),
  },
  {
    name: 'no-house-number-crossing-street',
    weight: 4,
    build: (r, p) => {
      if (p.street.postalCodes.length < 2) return undefined;
      const code = wrongCode(r, p, namesakeCodes(p));
      const fields = { ...base(p), houseNumber: '', postalCode: code ?? '' };
      return code ? { fields, intendedClass: 'E' } : { fields, intendedClass: 'E', presentation: 'locality-line' };
    },
  },
  {
    name: 'namesake-streets-wrong-postal-code',
    weight: 4,
    build: (r, p) => {
      const code = unambiguous(p) ? undefined : wrongCode(r, p, namesakeCodes(p));
      return code ? { fields: { ...base(p), postalCode: code }, intendedClass: 'E' } : undefined;
    },
  },
  {
    name: 'unknown-street',
    weight: 3,
    build: (r, p) => {
      const street = inventedStreet(r);
      const key = normaliseKey(street);
      if (streetKeysNear(p.town, key, typoTolerance(key)).length > 0) return undefined;
      return { fields: { ...base(p), street }, intendedClass: 'F' };
    },
  },
  {
    name: 'unknown-locality',
    weight: 3,
    build: (r, p) => {
      const locality = inventedTown(r);
      const key = normaliseKey(locality);
      const digits = p.segment.postalCode.length;
      const postalCode = String(r.int(10 ** (digits - 1), 10 ** digits - 1));
      const tolerance = typoTolerance(key);
      const near = p.index.towns.some((t) => [t.key, ...t.aliasKeys].some((k) => boundedEditDistance(key, k, tolerance) <= tolerance));
      if (near || p.index.townByPostalCode.has(postalCode)) return undefined;
      return { fields: { ...base(p), postalCode, locality }, intendedClass: 'F' };
    },
  },
];
