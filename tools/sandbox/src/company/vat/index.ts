import * as jsvat from 'jsvat';
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
 * The other prefixes of the EU's VAT numbers (VIES): each country's check digits as the `jsvat`
 * library implements them, by the prefix it reads (Greece's numbers carry EL, Northern Ireland's
 * XI holds a GB number).
 */
const OTHER_EU: Readonly<Record<string, { country: jsvat.Country; as: string }>> = {
  BG: { country: jsvat.bulgaria, as: 'BG' },
  CY: { country: jsvat.cyprus, as: 'CY' },
  CZ: { country: jsvat.czechRepublic, as: 'CZ' },
  DK: { country: jsvat.denmark, as: 'DK' },
  EE: { country: jsvat.estonia, as: 'EE' },
  EL: { country: jsvat.greece, as: 'EL' },
  FI: { country: jsvat.finland, as: 'FI' },
  HR: { country: jsvat.croatia, as: 'HR' },
  HU: { country: jsvat.hungary, as: 'HU' },
  IE: { country: jsvat.ireland, as: 'IE' },
  LT: { country: jsvat.lithuania, as: 'LT' },
  LU: { country: jsvat.luxembourg, as: 'LU' },
  LV: { country: jsvat.latvia, as: 'LV' },
  MT: { country: jsvat.malta, as: 'MT' },
  PL: { country: jsvat.poland, as: 'PL' },
  PT: { country: jsvat.portugal, as: 'PT' },
  RO: { country: jsvat.romania, as: 'RO' },
  SE: { country: jsvat.sweden, as: 'SE' },
  SI: { country: jsvat.slovenia, as: 'SI' },
  SK: { country: jsvat.slovakiaRepublic, as: 'SK' },
  XI: { country: jsvat.unitedKingdom, as: 'GB' },
};

/** Every prefix a VAT ID may have here: the EU's member states (VIES) and XI, sorted. */
export const VAT_PREFIXES: readonly string[] = [...VAT_COUNTRIES, ...Object.keys(OTHER_EU)].sort();

/**
 * Checks the syntax and check digits of a VAT ID (contract 4.7, searchMethod `vat`): it says
 * nothing about whether the ID belongs to a company. `UNKNOWN_COUNTRY` when the first two
 * characters are not one of {@link VAT_PREFIXES}; the service turns that into a 400 (contract 4.7
 * rule 4). The countries of {@link VAT_COUNTRIES} follow the sandbox's own rules (it also makes IDs
 * for them), the other EU countries the `jsvat` library's.
 */
export function checkVatId(vatId: string): VatCheckResult {
  const compact = compactVatId(vatId);
  const prefix = compact.slice(0, 2);
  const body = compact.slice(2);
  if (isVatCountry(prefix)) return NATIONAL_RULES[prefix].valid(body) ? 'VALID_VAT_ID' : 'INVALID_VAT_ID';
  const other = OTHER_EU[prefix];
  if (other === undefined) return 'UNKNOWN_COUNTRY';
  return jsvat.checkVAT(other.as + body, [other.country]).isValid ? 'VALID_VAT_ID' : 'INVALID_VAT_ID';
}

/**
 * A valid VAT ID for `country`, derived deterministically from `n` (a non-negative integer):
 * the same `n` gives the same ID, different small `n` give different IDs.
 */
export function makeVatId(country: VatCountry, n: number): string {
  return country + NATIONAL_RULES[country].make(n);
}
