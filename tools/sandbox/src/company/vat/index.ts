import { NATIONAL_RULES, VAT_COUNTRIES, type VatCountry } from './national-rules.js';

export { VAT_COUNTRIES, type VatCountry } from './national-rules.js';

/** Outcome of a VAT ID syntax check. */
export type VatCheckResult = 'VALID_VAT_ID' | 'INVALID_VAT_ID' | 'UNKNOWN_COUNTRY';

/** Upper case without the separators people type into VAT IDs (space, dot, hyphen, slash). */
export function compactVatId(vatId: string): string {
  return vatId.replace(/[\s./-]/g, '').toUpperCase();
}

function isVatCountry(prefix: string): prefix is VatCountry {
  return (VAT_COUNTRIES as readonly string[]).includes(prefix);
}

/**
 * Checks the syntax and check digits of a VAT ID (contract 4.7, searchMethod `vat`): it says
 * nothing about whether the ID belongs to a company. `UNKNOWN_COUNTRY` when the first two
 * characters are not the prefix of a country in {@link VAT_COUNTRIES}; the service turns that
 * into a 400 (contract 4.7 rule 4).
 */
export function checkVatId(vatId: string): VatCheckResult {
  const compact = compactVatId(vatId);
  const prefix = compact.slice(0, 2);
  if (!isVatCountry(prefix)) return 'UNKNOWN_COUNTRY';
  return NATIONAL_RULES[prefix].valid(compact.slice(2)) ? 'VALID_VAT_ID' : 'INVALID_VAT_ID';
}

/**
 * A valid VAT ID for `country`, derived deterministically from `n` (a non-negative integer):
 * the same `n` gives the same ID, different small `n` give different IDs.
 */
export function makeVatId(country: VatCountry, n: number): string {
  return country + NATIONAL_RULES[country].make(n);
}
