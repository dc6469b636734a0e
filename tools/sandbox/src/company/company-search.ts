import type { NameIndex } from './name-index.js';
import { normaliseCompanyName, normaliseStreet, squash, words, type LegalFormKey } from './normalise.js';
import { similarity } from './similarity.js';
import type { CompanyHit, CompanyRecord } from './types.js';

/** Input fields of searchMethod `company` (contract 4.7), already type-checked. */
export interface CompanySearchInput {
  readonly company: string;
  readonly zip?: number;
  readonly city?: string;
  readonly street?: string;
}

/** Filters shared by `company` and `tr`. */
export interface SearchFilter {
  /** 1–100. */
  readonly minScore: number;
  readonly includeDeleted: boolean;
}

// Score deductions, in points, for address fields that do not agree with the hit.
const ZIP_SAME_REGION_PENALTY = 4;
const ZIP_OTHER_PENALTY = 12;
const CITY_PENALTY = 15;
const STREET_PENALTY = 10;

function legalFormFactor(query: LegalFormKey | undefined, record: LegalFormKey | undefined): number {
  if (query === record) return 1;
  return query === undefined ? 0.97 : 0.88;
}

function addressPenalty(input: CompanySearchInput, record: CompanyRecord): number {
  let penalty = 0;
  if (input.zip !== undefined && input.zip !== record.zip) {
    // German postcodes share their first two digits within a region (e.g. 80xxx, 81xxx Munich).
    const sameRegion = Math.floor(input.zip / 1000) === Math.floor(record.zip / 1000);
    penalty += sameRegion ? ZIP_SAME_REGION_PENALTY : ZIP_OTHER_PENALTY;
  }
  if (input.city !== undefined) {
    penalty += (1 - similarity(words(input.city).join(' '), words(record.city).join(' '))) * CITY_PENALTY;
  }
  if (input.street !== undefined) {
    penalty += (1 - similarity(normaliseStreet(input.street), normaliseStreet(record.street))) * STREET_PENALTY;
  }
  return penalty;
}

/** Contract 2.3: 100 means input and hit are fully identical, so only then. */
function identical(input: CompanySearchInput, record: CompanyRecord): boolean {
  return (
    squash(input.company) === record.company &&
    (input.zip === undefined || input.zip === record.zip) &&
    (input.city === undefined || squash(input.city) === record.city) &&
    (input.street === undefined || squash(input.street) === record.street)
  );
}

/**
 * Error-tolerant search by name and optional address. The name decides the base score (weighted
 * word similarity, legal form compared apart, so "Mueller Maschinenbau G.m.b.H." finds
 * "Müller Maschinenbau GmbH"); address fields that disagree lower it. Every hit with
 * searchScore ≥ minScore, best first, ties by id.
 */
export function searchCompanies(records: readonly CompanyRecord[], index: NameIndex, input: CompanySearchInput, filter: SearchFilter): CompanyHit[] {
  const name = normaliseCompanyName(input.company);
  if (name.tokens.length === 0) return [];
  const matches = index.match(name.tokens);
  const hits: CompanyHit[] = [];
  for (const position of matches.candidates) {
    const record = records[position];
    if (!record || (record.trStatus === 'inactive' && !filter.includeDeleted)) continue;
    const nameScore = 100 * matches.dice(position) * legalFormFactor(name.legalForm, index.legalForm(position));
    // The address only lowers a score, so the name alone already rules most candidates out.
    if (nameScore < filter.minScore) continue;
    const cap = identical(input, record) ? 100 : 99;
    const score = Math.max(1, Math.min(cap, Math.round(nameScore - addressPenalty(input, record))));
    if (score >= filter.minScore) hits.push({ ...record, searchMethod: 'company', searchScore: score });
  }
  return hits.sort((a, b) => b.searchScore - a.searchScore || a.id - b.id);
}
