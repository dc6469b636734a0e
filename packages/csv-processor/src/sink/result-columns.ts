import type { Mode, RecordResult } from '@dq/core';
import { stringifyJson } from '../source/lossless-json.js';
import type { SourceItem } from '../source/types.js';
import type { CellValue } from './csv-format.js';

/** The result columns appended to every output row, per mode and include options. */
/**
 * Result columns whose values are numbers, written as numbers (never neutralised by
 * --spreadsheet-safe: a spreadsheet reads `-73.98` as a number, not a formula).
 */
export const NUMBER_COLUMNS: ReadonlySet<string> = new Set(['dq_latitude', 'dq_longitude', 'dq_coordinate_precision', 'dq_candidates', 'dq_score', 'dq_hits']);

export interface ResultColumns {
  /** Column names, in output order; all start with `dq_`. */
  readonly names: readonly string[];
  /** The values of one record's result, aligned with `names`. */
  values(result: RecordResult): CellValue[];
}

/**
 * Result columns for `mode`:
 * - address: status, class, the best candidate's fields, coordinates (with `coordinates-wgs84`),
 *   `_meta` as JSON (with `metadata`), candidate count and house-number ranges (class E);
 * - company / tr: status, the best hit (id, name, address, register court/type/number, status,
 *   score), the hit count and, for a review (several hits, no clear winner), every hit as JSON;
 * - vat: status and the check code.
 * Every mode ends with `dq_request_id`, `dq_checked_at` (when the platform gave the answer, ISO time;
 * an answer from the result store keeps its own) and `dq_error` (`code: message`, violations appended);
 * address, company and tr modes then have `dq_review_candidates` (address: every candidate of a
 * `review` row, as JSON; empty on other rows) and `dq_review_decision` (empty: filled in by
 * `dq-csv review apply`, so applying decisions changes only the decided rows).
 */
export function resultColumns(mode: Mode, include: readonly string[] = []): ResultColumns {
  const columns: [string, (r: RecordResult) => CellValue][] = [['dq_status', (r) => r.status]];
  if (mode === 'address') {
    columns.push(
      ['dq_result_class', (r) => r.resultClass],
      ['dq_street', (r) => r.address?.street],
      ['dq_house_number', (r) => r.address?.houseNumber],
      ['dq_postal_code', (r) => r.address?.postalCode],
      ['dq_locality', (r) => r.address?.locality],
      ['dq_sub_locality', (r) => r.address?.subLocality],
      ['dq_country', (r) => r.address?.country],
      ['dq_address_type', (r) => r.address?.addressType],
    );
    if (include.includes('coordinates-wgs84')) {
      columns.push(
        ['dq_latitude', (r) => r.address?.coordinates?.wgs84?.lat],
        ['dq_longitude', (r) => r.address?.coordinates?.wgs84?.lon],
        ['dq_coordinate_precision', (r) => r.address?.coordinates?.wgs84?.precision],
      );
    }
    if (include.includes('metadata')) {
      columns.push(['dq_meta', (r) => (r.address?._meta === undefined ? undefined : JSON.stringify(r.address._meta))]);
    }
    columns.push(['dq_candidates', (r) => (r.candidates ? r.candidates.length : r.address ? 1 : 0)], ['dq_house_number_choice', (r) => houseNumberChoice(r)]);
  } else if (mode === 'company' || mode === 'tr') {
    columns.push(
      ['dq_company_id', (r) => r.company?.id],
      ['dq_company_name', (r) => r.company?.company],
      ['dq_company_zip', (r) => r.company?.zip],
      ['dq_company_city', (r) => r.company?.city],
      ['dq_company_street', (r) => r.company?.street],
      ['dq_tr_court', (r) => r.company?.trCourt],
      ['dq_tr_type', (r) => r.company?.trType],
      ['dq_tr_no', (r) => r.company?.trNo],
      ['dq_tr_status', (r) => r.company?.trStatus],
      ['dq_score', (r) => r.company?.searchScore],
      ['dq_hits', (r) => r.hits ?? 0],
      ['dq_company_candidates', (r) => (r.companies === undefined ? undefined : JSON.stringify(r.companies))],
    );
  } else {
    columns.push(['dq_vat_code', (r) => r.vatCode]);
  }
  columns.push(['dq_request_id', (r) => r.requestId ?? r.error?.requestId], ['dq_checked_at', (r) => r.checkedAt], ['dq_error', (r) => errorText(r)]);
  if (mode === 'address') {
    columns.push(['dq_review_candidates', (r) => (r.status === 'review' ? JSON.stringify(r.candidates ?? (r.address ? [r.address] : [])) : undefined)]);
  }
  if (mode !== 'vat') columns.push(['dq_review_decision', () => undefined]);
  const getters = columns.map(([, get]) => get);
  return {
    names: columns.map(([name]) => name),
    values: (result) => getters.map((get) => scalar(get(result))),
  };
}

/** `code: message`, then each violation as `field: message`, separated by `; `. */
function errorText(result: RecordResult): string | undefined {
  const error = result.error;
  if (!error) return undefined;
  const parts = [`${error.code}: ${error.message}`];
  for (const v of error.violations ?? []) parts.push(`${v.fieldName}: ${v.message}`);
  return parts.join('; ');
}

/** House-number ranges of class E candidates, e.g. `10115 1-49 odd | 10117 50-120 even`. */
function houseNumberChoice(result: RecordResult): string | undefined {
  const parts: string[] = [];
  for (const candidate of result.candidates ?? []) {
    for (const range of candidate.houseNumberChoice ?? []) {
      parts.push(`${candidate.postalCode ?? ''} ${range.from}-${range.to} ${range.step}`.trim());
    }
  }
  return parts.length > 0 ? parts.join(' | ') : undefined;
}

function scalar(value: unknown): CellValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' || typeof value === 'number') return value;
  return String(value);
}

/**
 * A JSON object that has a key the run appends (dq_status, …) would lose its own value to the
 * result: it goes to the rejects instead, whole (a CSV header with such a column is refused at once).
 */
export function refuseResultKeys(item: SourceItem, names: readonly string[]): SourceItem {
  if (item.kind !== 'row' || !item.object) return item;
  const taken = names.filter((name) => Object.hasOwn(item.object!, name));
  if (taken.length === 0) return item;
  return {
    kind: 'reject',
    line: item.line,
    code: 'result-key-clash',
    reason: `the object already has ${taken.length === 1 ? 'a key' : 'keys'} ${taken.join(', ')}, which dq-csv writes its result to (is it an output of dq-csv?); rename ${taken.length === 1 ? 'it' : 'them'} or clean the original record`,
    raw: stringifyJson(item.object),
    position: item.position,
  };
}
