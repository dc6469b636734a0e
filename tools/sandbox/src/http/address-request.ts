import { ADDRESS_INCLUDE_VALUES } from '@dq/core/schemas';
import { ISO_COUNTRIES } from './iso-countries.js';
import type { Violation } from './problems.js';

/**
 * Include values the platform knows (contract 2.1 and docs/platform-contract.md): the list is
 * @dq/core's; the checks of a request below are the sandbox's own.
 */
export const INCLUDE_VALUES: ReadonlySet<string> = new Set(ADDRESS_INCLUDE_VALUES);

const ADDRESS_FIELDS = ['street', 'houseNumber', 'addressLine', 'postalCode', 'locality', 'localityLine'] as const;
const AUTOCOMPLETE_FIELDS = ['query', 'postalCode', 'locality', 'street', 'houseNumber'] as const;

/** An address request that passed the 400 rules; every field a string. */
export interface CheckedAddress {
  input: { country: string } & Partial<Record<(typeof ADDRESS_FIELDS)[number], string>>;
  include: ReadonlySet<string>;
}

/** An autocomplete request that passed the 400 rules (docs/platform-contract.md shape). */
export interface CheckedAutocomplete {
  request: { country: string } & Partial<Record<(typeof AUTOCOMPLETE_FIELDS)[number], string>>;
  include: ReadonlySet<string>;
}

type Result<T> = { ok: true; value: T } | { ok: false; violations: Violation[] };

const filled = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';

/** True for a plain JSON object (not null, not an array). */
export function isObject(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

const NOT_AN_OBJECT: Violation = { fieldName: 'body', message: 'The request body must be a JSON object.' };

/** Violations of `country`: present, two upper-case letters, an assigned ISO 3166-1 code. */
export function checkCountry(country: unknown, out: Violation[]): country is string {
  if (country === undefined || country === null || country === '') {
    out.push({ fieldName: 'country', message: 'country must not be empty; send a two-letter upper-case ISO 3166-1 code such as "DE".' });
    return false;
  }
  if (typeof country !== 'string' || !/^[A-Z]{2}$/.test(country) || !ISO_COUNTRIES.has(country)) {
    out.push({ fieldName: 'country', message: 'country must be a two-letter upper-case ISO 3166-1 alpha-2 code such as "DE".' });
    return false;
  }
  return true;
}

function checkStrings<K extends string>(b: Record<string, unknown>, names: readonly K[], out: Violation[]): Partial<Record<K, string>> {
  const fields: Partial<Record<K, string>> = {};
  for (const name of names) {
    const v = b[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') out.push({ fieldName: name, message: `${name} must be a string.` });
    else fields[name] = v;
  }
  return fields;
}

function checkInclude(b: Record<string, unknown>, out: Violation[]): Set<string> {
  const include = new Set<string>();
  const options = b['_options'];
  if (options === undefined || options === null) return include;
  if (typeof options !== 'object' || Array.isArray(options)) {
    out.push({ fieldName: '_options', message: '_options must be an object.' });
    return include;
  }
  const list = (options as Record<string, unknown>)['include'];
  if (list === undefined || list === null) return include;
  if (!Array.isArray(list)) {
    out.push({ fieldName: '_options.include', message: '_options.include must be an array of strings.' });
    return include;
  }
  for (const v of list) {
    if (typeof v === 'string' && INCLUDE_VALUES.has(v)) include.add(v);
    else out.push({ fieldName: '_options.include', message: `Unknown include value ${JSON.stringify(v)}; allowed: ${[...INCLUDE_VALUES].join(', ')}.` });
  }
  return include;
}

/** The 400 rules of contract 2.1 for validate and batch/sync. */
export function checkAddressRequest(body: unknown): Result<CheckedAddress> {
  if (!isObject(body)) return { ok: false, violations: [NOT_AN_OBJECT] };
  const b = body;
  const violations: Violation[] = [];
  const fields = checkStrings(b, ADDRESS_FIELDS, violations);
  const country = b['country'];
  const countryOk = checkCountry(country, violations);
  if (!filled(fields.localityLine) && !(filled(fields.postalCode) && filled(fields.locality))) {
    violations.push({
      fieldName: 'localityIdentificationSet',
      message: 'Send either localityLine, or both postalCode and locality.',
    });
  }
  const include = checkInclude(b, violations);
  if (violations.length > 0 || !countryOk) return { ok: false, violations };
  return { ok: true, value: { input: { ...fields, country }, include } };
}

/** The 400 rules of an autocomplete request: country, and a query or at least one structured field. */
export function checkAutocompleteRequest(body: unknown): Result<CheckedAutocomplete> {
  if (!isObject(body)) return { ok: false, violations: [NOT_AN_OBJECT] };
  const b = body;
  const violations: Violation[] = [];
  const fields = checkStrings(b, AUTOCOMPLETE_FIELDS, violations);
  const country = b['country'];
  const countryOk = checkCountry(country, violations);
  if (!AUTOCOMPLETE_FIELDS.some((f) => filled(fields[f]))) {
    violations.push({ fieldName: 'query', message: 'Send query, or at least one of postalCode, locality, street, houseNumber.' });
  }
  const include = checkInclude(b, violations);
  if (violations.length > 0 || !countryOk) return { ok: false, violations };
  return { ok: true, value: { request: { ...fields, country }, include } };
}
