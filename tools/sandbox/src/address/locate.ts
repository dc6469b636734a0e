/**
 * Candidate search: towns from the postal code and the town name, streets inside those towns by
 * key or by typo distance, then the house-number side that fixes the postal code. Each step
 * records how the input field matched and a weight: 0 for identical or normalised, 1 for a
 * high-confidence correction, 2 for a low-confidence one (see matcher.ts for the classes).
 */
import type { CountryIndex } from './country-index.js';
import { boundedEditDistance, typoTolerance } from './edit-distance.js';
import type { ParsedInput } from './parse-input.js';
import type { RefSegment, RefStreet, RefTown } from './reference-data.js';
import type { CoordinatePrecision, FieldStatus } from './types.js';

/** How one logical field matched, with its weight towards the result class. */
export interface FieldMatch {
  status: FieldStatus;
  weight: number;
}

/** One candidate address with the evidence for it. */
export interface Match {
  town: RefTown;
  street: RefStreet;
  postalCode: string;
  /** Reference spelling of the house number, or '' when the input had none. */
  houseNumber: string;
  houseValue: number | undefined;
  choice: RefSegment[] | undefined;
  precision: CoordinatePrecision;
  fields: { postalCode: FieldMatch; locality: FieldMatch; street: FieldMatch; houseNumber: FieldMatch };
  /** Sum of the field weights: 0 → A/B, 1 → C, 2 and more → D. */
  weight: number;
  /** weight plus tie-breakers below 1; the lowest score wins. */
  score: number;
}

const exactOrNormalised = (raw: string, reference: string): FieldMatch => ({ status: raw === reference ? 'IDENTIFIED' : 'NORMALIZED', weight: 0 });
const corrected = (weight: number): FieldMatch => ({ status: 'CORRECTED', weight });

/** Towns the input may mean: by town name (exact, alias or typo) and by postal code. */
export function findTowns(index: CountryIndex, input: ParsedInput): Map<RefTown, FieldMatch> {
  const out = new Map<RefTown, FieldMatch>();
  const key = input.locality.key;
  if (key !== '') {
    const exact = index.townsByKey.get(key);
    if (exact) {
      for (const { town, alias } of exact) {
        out.set(town, alias ? { status: 'NORMALIZED', weight: 0 } : exactOrNormalised(input.locality.raw, town.name));
      }
    } else {
      const tolerance = typoTolerance(key);
      for (const town of index.towns) {
        let distance = boundedEditDistance(key, town.key, tolerance);
        for (const alias of town.aliasKeys) distance = Math.min(distance, boundedEditDistance(key, alias, tolerance));
        if (distance <= tolerance) out.set(town, corrected(distance));
      }
    }
  }
  const byCode = index.townByPostalCode.get(input.postal.digits);
  // A town known only from the postal code: filling a missing name is safe, replacing one is not.
  if (byCode && !out.has(byCode)) out.set(byCode, corrected(key === '' ? 1 : 2));
  return out;
}

/** Streets of a town with the input's street key, else those within typo distance. */
export function findStreets(town: RefTown, input: ParsedInput): { street: RefStreet; match: FieldMatch }[] {
  const key = input.street.key;
  if (key === '') return [];
  const exact = town.streetsByKey.get(key);
  if (exact) return exact.map((street) => ({ street, match: exactOrNormalised(input.street.raw, street.name) }));
  const tolerance = typoTolerance(key);
  const out: { street: RefStreet; match: FieldMatch }[] = [];
  for (let length = key.length - tolerance; length <= key.length + tolerance; length++) {
    for (const candidate of town.streetKeysByLength.get(length) ?? []) {
      const distance = boundedEditDistance(key, candidate, tolerance);
      if (distance > tolerance) continue;
      for (const street of town.streetsByKey.get(candidate) ?? []) out.push({ street, match: corrected(distance) });
    }
  }
  return out;
}

function postalMatch(input: ParsedInput, code: string): FieldMatch {
  if (input.postal.digits === code) return exactOrNormalised(input.postal.raw, code);
  return corrected(1);
}

function pushMatch(
  out: Match[],
  town: RefTown,
  townMatch: FieldMatch,
  street: RefStreet,
  streetMatch: FieldMatch,
  input: ParsedInput,
  rest: Pick<Match, 'postalCode' | 'houseNumber' | 'houseValue' | 'choice' | 'precision'>,
  houseMatch: FieldMatch,
  tieBreak: number,
): void {
  const fields = { postalCode: postalMatch(input, rest.postalCode), locality: townMatch, street: streetMatch, houseNumber: houseMatch };
  const weight = fields.postalCode.weight + townMatch.weight + streetMatch.weight + houseMatch.weight;
  let normalised = 0;
  for (const field of Object.values(fields)) if (field.status === 'NORMALIZED') normalised++;
  out.push({ town, street, ...rest, fields, weight, score: weight + normalised * 0.01 + tieBreak });
}

/** Adds the candidates of one street: by house number, or one per postal area without one. */
export function addStreetMatches(out: Match[], town: RefTown, townMatch: FieldMatch, street: RefStreet, streetMatch: FieldMatch, input: ParsedInput): void {
  const house = input.house.parsed;
  if (!house) {
    const missing: FieldMatch = { status: 'MISSING', weight: 2 };
    for (const code of street.postalCodes) {
      const choice = street.segments.filter((segment) => segment.postalCode === code);
      const precision = street.postalCodes.length > 1 ? 'house-number-range' : 'street';
      pushMatch(out, town, townMatch, street, streetMatch, input, { postalCode: code, houseNumber: '', houseValue: undefined, choice, precision }, missing, 0);
    }
    return;
  }
  const step = house.number % 2 === 1 ? 'odd' : 'even';
  const houseMatch: FieldMatch = house.truncated ? corrected(1) : exactOrNormalised(input.house.raw, house.canonical);
  let found = false;
  for (const segment of street.segments) {
    if (segment.step !== step || house.number < segment.from || house.number > segment.to) continue;
    found = true;
    pushMatch(
      out,
      town,
      townMatch,
      street,
      streetMatch,
      input,
      { postalCode: segment.postalCode, houseNumber: house.canonical, houseValue: house.number, choice: undefined, precision: 'house-number' },
      houseMatch,
      0,
    );
  }
  if (found) return;
  // Outside every range: keep the number, unverified, on the side with the nearest range.
  let nearest: RefSegment | undefined;
  let nearestGap = Infinity;
  for (const segment of street.segments) {
    const distance = house.number < segment.from ? segment.from - house.number : Math.max(0, house.number - segment.to);
    const gap = distance + (segment.step === step ? 0 : 0.5);
    if (gap < nearestGap) [nearest, nearestGap] = [segment, gap];
  }
  if (!nearest) return;
  pushMatch(
    out,
    town,
    townMatch,
    street,
    streetMatch,
    input,
    { postalCode: nearest.postalCode, houseNumber: house.canonical, houseValue: undefined, choice: undefined, precision: 'street' },
    { status: 'UNVERIFIED', weight: 2 },
    Math.min(0.5, nearestGap / 400),
  );
}
