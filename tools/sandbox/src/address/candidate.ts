import type { FieldMatch, Match } from './locate.js';
import type { ParsedInput } from './parse-input.js';
import { housePosition } from './reference-data.js';
import type { RefSegment, RefStreet } from './reference-data.js';
import type { Candidate, CandidateMeta, FieldRelevance, FieldStatus } from './types.js';

const STATUS_ORDER: readonly FieldStatus[] = ['IDENTIFIED', 'NORMALIZED', 'CORRECTED', 'UNVERIFIED', 'MISSING'];

function worst(...statuses: FieldStatus[]): FieldStatus {
  let index = 0;
  for (const status of statuses) index = Math.max(index, STATUS_ORDER.indexOf(status));
  return STATUS_ORDER[index] as FieldStatus;
}

/** A line counts as identical only when its parts are and it is spelt as the reference would. */
function lineStatus(raw: string, reference: string, parts: FieldStatus): FieldStatus {
  return parts === 'IDENTIFIED' && raw !== reference ? 'NORMALIZED' : parts;
}

/** `_meta.fields`, keyed by the input fields the caller used. */
export function fieldStatuses(match: Match, input: ParsedInput): CandidateMeta['fields'] {
  const { fields } = match;
  const out: CandidateMeta['fields'] = {};
  const put = (name: string, relevance: FieldRelevance, status: FieldStatus): void => {
    out[name] = { relevance, status };
  };
  if (input.usesAddressLine) {
    const reference = match.houseNumber === '' ? match.street.name : `${match.street.name} ${match.houseNumber}`;
    put('addressLine', 'MANDATORY', lineStatus(input.addressLine ?? '', reference, worst(fields.street.status, fields.houseNumber.status)));
  } else {
    put('street', 'MANDATORY', fields.street.status);
    put('houseNumber', 'IMPORTANT', fields.houseNumber.status);
  }
  if (input.usesLocalityLine) {
    put(
      'localityLine',
      'MANDATORY',
      lineStatus(input.localityLine ?? '', `${match.postalCode} ${match.town.name}`, worst(fields.postalCode.status, fields.locality.status)),
    );
  } else {
    put('postalCode', 'MANDATORY', fields.postalCode.status);
    put('locality', 'MANDATORY', fields.locality.status);
  }
  put('country', 'MANDATORY', 'IDENTIFIED');
  return out;
}

function round6(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

function position(match: Match): { lat: number; lon: number } {
  if (match.houseValue !== undefined) return housePosition(match.street, match.houseValue);
  const segments = match.choice ?? match.street.segments;
  const low = Math.min(...segments.map((s) => s.from));
  const high = Math.max(...segments.map((s) => s.to));
  return housePosition(match.street, Math.round((low + high) / 2));
}

/**
 * The contract's candidate for a match; coordinates and `_meta` only when asked for (`_meta` also
 * needs the parsed input it describes).
 */
export function toCandidate(match: Match, include: ReadonlySet<string>, input?: ParsedInput): Candidate {
  const { town, street } = match;
  const subLocality = town.districts.get(match.postalCode);
  const candidate: Candidate = {
    addressType: 'delivery',
    country: town.country,
    postalCode: match.postalCode,
    locality: town.name,
    ...(town.abbreviation === undefined ? {} : { localityAbbreviation: town.abbreviation }),
    ...(subLocality === undefined ? {} : { subLocality }),
    street: street.name,
    ...(street.abbreviation === undefined ? {} : { streetAbbreviation: street.abbreviation }),
    houseNumber: match.houseNumber,
  };
  if (match.choice) {
    candidate.houseNumberChoice = match.choice.map((s) => ({ from: String(s.from), to: String(s.to), step: s.step }));
  }
  if (include.has('coordinates-wgs84')) {
    const { lat, lon } = position(match);
    candidate.coordinates = { wgs84: { precision: match.precision, lat: round6(lat), lon: round6(lon) } };
  }
  if (input && include.has('metadata')) candidate._meta = { fields: fieldStatuses(match, input) };
  return candidate;
}

const AS_GIVEN: FieldMatch = { status: 'IDENTIFIED', weight: 0 };

/** A match that is simply a reference address (autocomplete, known truths of generated inputs). */
export function referenceMatch(street: RefStreet, postalCode: string, house: { text: string; value: number } | undefined, choice?: RefSegment[]): Match {
  const precision = house ? 'house-number' : street.postalCodes.length > 1 ? 'house-number-range' : 'street';
  return {
    town: street.town,
    street,
    postalCode,
    houseNumber: house?.text ?? '',
    houseValue: house?.value,
    choice,
    precision,
    fields: { postalCode: AS_GIVEN, locality: AS_GIVEN, street: AS_GIVEN, houseNumber: AS_GIVEN },
    weight: 0,
    score: 0,
  };
}
