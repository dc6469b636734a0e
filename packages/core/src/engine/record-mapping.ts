import type { EngineRecord, Mode } from './types.js';

/** The request fields each mode reads from a record (contract 2.1 and 4.7). */
export const MODE_FIELDS = {
  address: ['street', 'houseNumber', 'addressLine', 'postalCode', 'locality', 'localityLine', 'country'],
  company: ['company', 'zip', 'city', 'street'],
  tr: ['trCourt', 'trType', 'trNo'],
  vat: ['vatId'],
} as const satisfies Record<Mode, readonly string[]>;

/** Request fields of one record after trimming; absent fields are left out. */
export type RequestFields = Record<string, string>;

/**
 * Maps a record to the request fields of `mode`: values are stringified and trimmed, empty ones are
 * left out (the platform treats "" and absent differently; a blank cell means "no value"), and an
 * address without a country gets `defaultCountry`. Fields a mode does not know are ignored.
 *
 * Addresses are put in the shape the platform takes without changing what they say: the country
 * code is upper-cased (`de` → `DE`: the platform takes only upper-case codes), and a locality
 * without a postal code, or a postal code without a locality, is sent as `localityLine` (the
 * platform takes either `localityLine` alone or both `postalCode` and `locality`; a lone one of the
 * pair would be refused with a 400 on `localityIdentificationSet`). Only the request changes: the
 * connectors write the record's own values back unchanged.
 */
export function mapRecord(mode: Mode, record: EngineRecord, defaultCountry?: string): RequestFields {
  const fields: RequestFields = {};
  for (const name of MODE_FIELDS[mode]) {
    const raw = record[name];
    if (raw === null || raw === undefined) continue;
    const value = String(raw).trim();
    if (value !== '') fields[name] = value;
  }
  if (mode === 'address') shapeAddress(fields, defaultCountry);
  return fields;
}

function shapeAddress(fields: RequestFields, defaultCountry: string | undefined): void {
  const country = fields['country'] ?? defaultCountry?.trim();
  if (country) fields['country'] = LOWER_CASE.test(country) ? country.toUpperCase() : country;
  if (fields['localityLine'] !== undefined) return;
  const postalCode = fields['postalCode'];
  const locality = fields['locality'];
  if ((postalCode === undefined) === (locality === undefined)) return;
  fields['localityLine'] = (postalCode ?? locality) as string;
  delete fields['postalCode'];
  delete fields['locality'];
}

const LOWER_CASE = /[a-z]/;

/**
 * The dedup, cache and store key of a request: `scope` (mode and every setting that changes the
 * answer) plus the fields in a fixed order, each exactly as it is sent (trimmed, nothing else).
 * Values that differ only in case, spacing or Unicode form are different questions: the platform
 * answers them differently (class B says it normalised case or spacing; a company's score is 100
 * only for the name as registered), so they never share an answer.
 */
export function requestKey(scope: string, fields: RequestFields): string {
  const parts = [scope];
  for (const name of KEY_FIELD_ORDER) {
    const value = fields[name];
    if (value !== undefined) parts.push(KEY_PREFIX[name] as string, escapeSeparator(value));
  }
  // One flat string: `+=` would build a tree of string pieces (V8's cons strings) that the cache,
  // the calls in flight and every batch's groups keep and hash as it is, about 400 bytes more per
  // key and slower to look up.
  return parts.join('');
}

/** Between the parts of a key; a value containing it (or the escape) is escaped, so parts cannot run together. */
const SEPARATOR = '\u0001';
const NEEDS_ESCAPE = /[\u0001\\]/;
const escapeSeparator = (value: string): string => (NEEDS_ESCAPE.test(value) ? value.replace(/[\u0001\\]/g, (c) => (c === '\\' ? '\\\\' : '\\1')) : value);

/** Every request field of every mode, sorted: the order of the parts of a key. */
const KEY_FIELD_ORDER: readonly string[] = [...new Set(Object.values(MODE_FIELDS).flat())].sort();
/** What goes before each field's value in a key. */
const KEY_PREFIX: Readonly<Record<string, string>> = Object.fromEntries(KEY_FIELD_ORDER.map((name) => [name, `${SEPARATOR}${name}=`]));
