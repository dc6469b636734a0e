import type { AddressCandidate, CompanyRecord, RecordResult } from '@dq/core';
import { CsvError } from '../errors.js';
import type { CellValue } from '../sink/csv-format.js';
import { resultColumns } from '../sink/result-columns.js';

/**
 * The review file's layout, shared by `review export` and `review apply` (and the same column
 * names as dq-pg's review file, so users see one format):
 *
 *   line, <every input column>, class, request_id, candidate_1_<field>…, candidate_N_<field>…, decision
 *
 * `line` is the data row number in the cleaned file (1 = the row under the header).
 */
export const LINE_COLUMN = 'line';
export const CLASS_COLUMN = 'class';
export const REQUEST_ID_COLUMN = 'request_id';
export const DECISION_COLUMN = 'decision';

/** Which kind of cleaned file: address rows (candidates in dq_review_candidates) or company hits. */
export type ReviewMode = 'address' | 'company';

/** One field of a candidate as the review file shows it. */
interface CandidateField<C> {
  readonly suffix: string;
  readonly get: (candidate: C) => unknown;
}

const ADDRESS_FIELDS: readonly CandidateField<AddressCandidate>[] = [
  { suffix: 'street', get: (c) => c.street },
  { suffix: 'house_number', get: (c) => c.houseNumber },
  { suffix: 'postal_code', get: (c) => c.postalCode },
  { suffix: 'locality', get: (c) => c.locality },
  { suffix: 'sub_locality', get: (c) => c.subLocality },
  { suffix: 'country', get: (c) => c.country },
  { suffix: 'address_type', get: (c) => c.addressType },
  { suffix: 'house_number_choice', get: (c) => c.houseNumberChoice?.map((r) => `${r.from}-${r.to} ${r.step}`).join(' | ') },
];

const COMPANY_FIELDS: readonly CandidateField<CompanyRecord>[] = [
  { suffix: 'company_id', get: (c) => c.id },
  { suffix: 'name', get: (c) => c.company },
  { suffix: 'street', get: (c) => c.street },
  { suffix: 'zip', get: (c) => c.zip },
  { suffix: 'city', get: (c) => c.city },
  { suffix: 'tr_court', get: (c) => c.trCourt },
  { suffix: 'tr_type', get: (c) => c.trType },
  { suffix: 'tr_no', get: (c) => c.trNo },
  { suffix: 'tr_status', get: (c) => c.trStatus },
  { suffix: 'score', get: (c) => c.searchScore },
];

/** What the review commands need to know about a cleaned file's columns. */
export interface CleanedLayout {
  readonly mode: ReviewMode;
  /** Every result column dq-csv writes in this mode: the rest of a row is the input's. */
  readonly resultNames: ReadonlySet<string>;
  /** `dq_review_candidates` (address) or `dq_company_candidates` (company, tr). */
  readonly candidates: string;
  /** Candidate fields as the review file shows them. */
  readonly fieldSuffixes: readonly string[];
  /** The dq_ columns a chosen candidate is written into, with the value for each. */
  chosenValues(candidate: unknown): Map<string, CellValue>;
  /** A candidate's fields as the review file shows them, as text. */
  candidateCells(candidate: unknown): string[];
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
  const fields = (mode === 'address' ? ADDRESS_FIELDS : COMPANY_FIELDS) as readonly CandidateField<unknown>[];
  return {
    mode,
    resultNames: new Set(columns.names),
    candidates: address ? 'dq_review_candidates' : 'dq_company_candidates',
    fieldSuffixes: fields.map((f) => f.suffix),
    chosenValues(candidate) {
      // The same getters validate used, so a chosen candidate reads exactly like an accepted answer.
      const result: RecordResult =
        mode === 'address'
          ? { status: 'accepted', source: 'local', address: candidate as AddressCandidate }
          : { status: 'accepted', source: 'local', company: candidate as CompanyRecord };
      const values = columns.values(result);
      return new Map(targets.map((t) => [t.name, values[t.value]]));
    },
    candidateCells(candidate) {
      return fields.map((f) => text(f.get(candidate)));
    },
  };
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : JSON.stringify(value);
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

// Cells a spreadsheet may run as a formula (=, +, -, @, tab, CR), and the apostrophe itself, so
// that removing one leading apostrophe on the way back undoes the prefix exactly, for every value.
const NEEDS_PREFIX = /^[=+\-@\t\r']/;

/** A cell as the review file holds it: a leading `'` before values a spreadsheet would run. */
export function neutralise(value: string): string {
  return NEEDS_PREFIX.test(value) ? `'${value}` : value;
}

/** Undoes {@link neutralise}. */
export function restore(value: string): string {
  return value.startsWith("'") ? value.slice(1) : value;
}
