import { CANDIDATE_FIELDS } from '@dq/core/review';
import type { CandidateField, CandidateKind } from '@dq/core/review';
import type { AddressCandidate, CompanyRecord, RecordResult } from '@dq/core';
import { CsvError } from '../errors.js';
import type { CellValue } from '../sink/csv-format.js';
import { resultColumns } from '../sink/result-columns.js';

/**
 * The review file's layout is @dq/core's (`reviewHeader`, `reviewRow`: the same as dq-pg's), led
 * by `line`, the data row number in the cleaned file (1 = the row under the header), and every
 * input column:
 *
 *   line, <every input column>, class, request_id, candidate_1_<field>…, candidate_N_<field>…, decision
 */
export const LINE_COLUMN = 'line';

/** Which kind of cleaned file: address rows (candidates in dq_review_candidates) or company hits. */
export type ReviewMode = CandidateKind;

/**
 * dq-csv's names for three company candidate columns, kept for review files already in use: named
 * like the dq_ result columns a chosen candidate is written into (dq_company_id, dq_score).
 */
const COMPANY_SUFFIXES: Readonly<Record<string, string>> = { id: 'company_id', company: 'name', searchScore: 'score' };
const COMPANY_FIELDS = CANDIDATE_FIELDS.company.map((f) => ({ ...f, suffix: COMPANY_SUFFIXES[f.field] ?? f.suffix }));

/** What the review commands need to know about a cleaned file's columns. */
export interface CleanedLayout {
  readonly mode: ReviewMode;
  /** Every result column dq-csv writes in this mode: the rest of a row is the input's. */
  readonly resultNames: ReadonlySet<string>;
  /** `dq_review_candidates` (address) or `dq_company_candidates` (company, tr). */
  readonly candidates: string;
  /** Candidate fields as the review file shows them. */
  readonly fields: readonly CandidateField[];
  /** The dq_ columns a chosen candidate is written into, with the value for each. */
  chosenValues(candidate: unknown): Map<string, CellValue>;
}

/**
 * Reads the layout from the column names (CSV header, JSON keys) of a finished `dq-csv validate`
 * output. Throws a usage error saying what is missing when the file is not one (or was written
 * by a dq-csv without review columns).
 */
export function cleanedLayout(names: readonly string[], path: string): CleanedLayout {
  const has = (name: string) => names.includes(name);
  if (!has('dq_status')) {
    throw new CsvError(
      'bad-mapping',
      `${path} has no dq_status column: it is not an output of dq-csv validate (or its delimiter or format is not the one given)`,
    );
  }
  const address = has('dq_review_candidates');
  const company = has('dq_company_candidates');
  if ((!address && !company) || !has('dq_review_decision')) {
    throw new CsvError(
      'bad-mapping',
      `${path} has no ${!address && !company ? 'dq_review_candidates (or dq_company_candidates)' : 'dq_review_decision'} column: it was written by an older dq-csv, or in vat mode; run dq-csv validate again to get the review columns`,
    );
  }
  const mode: ReviewMode = address ? 'address' : 'company';
  const include = [has('dq_latitude') ? 'coordinates-wgs84' : '', has('dq_meta') ? 'metadata' : ''].filter(Boolean);
  const columns = resultColumns(mode, include);
  // The dq_ columns that describe the chosen address or company (status, counts and ids stay).
  const chosen =
    mode === 'address'
      ? [
          'dq_street',
          'dq_house_number',
          'dq_postal_code',
          'dq_locality',
          'dq_sub_locality',
          'dq_country',
          'dq_address_type',
          'dq_latitude',
          'dq_longitude',
          'dq_coordinate_precision',
          'dq_meta',
        ]
      : [
          'dq_company_id',
          'dq_company_name',
          'dq_company_zip',
          'dq_company_city',
          'dq_company_street',
          'dq_tr_court',
          'dq_tr_type',
          'dq_tr_no',
          'dq_tr_status',
          'dq_score',
        ];
  const targets = chosen.map((name) => ({ name, value: columns.names.indexOf(name) })).filter((t) => has(t.name) && t.value >= 0);
  return {
    mode,
    resultNames: new Set(columns.names),
    candidates: address ? 'dq_review_candidates' : 'dq_company_candidates',
    fields: mode === 'address' ? CANDIDATE_FIELDS.address : COMPANY_FIELDS,
    chosenValues(candidate) {
      // The same getters validate used, so a chosen candidate reads exactly like an accepted answer.
      const result: RecordResult =
        mode === 'address'
          ? { status: 'accepted', source: 'local', address: candidate as AddressCandidate }
          : { status: 'accepted', source: 'local', company: candidate as CompanyRecord };
      const values = columns.values(result);
      return new Map(targets.map((t) => [t.name, values[t.value]]));
    },
  };
}

/** The candidates stored in a review row's candidates cell (a JSON array), or why they cannot be read. */
export function parseCandidates(cell: string | undefined): unknown[] | string {
  if (cell === undefined || cell === '') return 'its candidates cell is empty';
  try {
    const parsed: unknown = JSON.parse(cell);
    return Array.isArray(parsed) ? parsed : 'its candidates cell is not a JSON array';
  } catch {
    return 'its candidates cell is not valid JSON';
  }
}
