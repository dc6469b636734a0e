import { toCandidate } from './candidate.js';
import type { CountryIndex } from './country-index.js';
import { addStreetMatches, findStreets, findTowns } from './locate.js';
import type { Match } from './locate.js';
import { parseInput } from './parse-input.js';
import type { AddressInput, MatchResult, ResultClass } from './types.js';

/** Candidates whose correction weight exceeds this are not offered at all (class F). */
const MAX_WEIGHT = 4;
/** At most this many candidates in a class E result. */
const MAX_CANDIDATES = 10;
const TIE = 1e-9;

function compareMatches(a: Match, b: Match): number {
  return a.score - b.score || a.street.id - b.street.id || a.postalCode.localeCompare(b.postalCode);
}

function classOf(match: Match, exactLines: boolean): ResultClass {
  if (match.weight === 0) {
    const identical = Object.values(match.fields).every((field) => field.status === 'IDENTIFIED');
    return identical && exactLines ? 'A' : 'B';
  }
  return match.weight === 1 ? 'C' : 'D';
}

/**
 * Validates one address against a country's reference data (contract 2.2): A identical; B only
 * normalisation differences; C one high-confidence correction (postal code from street, number
 * and town; a one-letter typo with a unique match); D one candidate after two or more
 * corrections, a bigger typo, an unknown or missing house number; E several equally good
 * candidates; F none.
 */
export function validateAddress(index: CountryIndex, input: AddressInput, include: ReadonlySet<string>): MatchResult {
  const parsed = parseInput(input);
  const matches: Match[] = [];
  for (const [town, townMatch] of findTowns(index, parsed)) {
    for (const { street, match } of findStreets(town, parsed)) {
      addStreetMatches(matches, town, townMatch, street, match, parsed);
    }
  }
  if (matches.length === 0) return { resultClass: 'F', results: [] };
  matches.sort(compareMatches);
  const best = matches[0] as Match;
  if (best.weight > MAX_WEIGHT) return { resultClass: 'F', results: [] };
  const tied = matches.filter((m) => m.score - best.score < TIE).slice(0, MAX_CANDIDATES);
  if (tied.length > 1) {
    return { resultClass: 'E', results: tied.map((m) => toCandidate(m, include, parsed)) };
  }
  const addressLineExact =
    !parsed.usesAddressLine || parsed.addressLine === (best.houseNumber === '' ? best.street.name : `${best.street.name} ${best.houseNumber}`);
  const localityLineExact = !parsed.usesLocalityLine || parsed.localityLine === `${best.postalCode} ${best.town.name}`;
  return {
    resultClass: classOf(best, addressLineExact && localityLineExact),
    results: [toCandidate(best, include, parsed)],
  };
}
