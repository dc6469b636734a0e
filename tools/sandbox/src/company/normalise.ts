/**
 * Text normalisation for error-tolerant company search: case, umlaut spellings (ü = ue = u
 * after folding), accents, punctuation and the many spellings of German legal forms.
 */

/** Canonical legal forms; `gmbh-co-kg` is the limited partnership with a GmbH as partner. */
export type LegalFormKey = 'gmbh-co-kg' | 'ug' | 'gmbh' | 'ag' | 'se' | 'kg' | 'ohg' | 'ek';

// Longest first: "GmbH & Co. KG" must not be read as "GmbH" followed by "KG".
const LEGAL_FORM_PATTERNS: ReadonlyArray<readonly [LegalFormKey, RegExp]> = [
  ['gmbh-co-kg', /\b(?:gmbh|g\.\s*m\.\s*b\.\s*h\.?)\s*(?:&|\+|und)\s*co\.?\s*(?:kg|k\.\s*g\.?)(?=\W|$)/g],
  ['ug', /\bug\s*\(?\s*haftungsbeschr(?:ae|a)nkt\s*\)?/g],
  ['gmbh', /\bgesellschaft mit beschr(?:ae|a)nkter haftung\b|\bg\.\s*m\.\s*b\.\s*h\.?|\bg?mbh\b/g],
  ['ag', /\baktiengesellschaft\b|\bag\b|\ba\.\s*g\./g],
  ['se', /\bsocietas europaea\b|\bse\b|\bs\.\s*e\./g],
  ['kg', /\bkommanditgesellschaft\b|\bkg\b|\bk\.\s*g\./g],
  ['ohg', /\boffene handelsgesellschaft\b|\bohg\b|\bo\.\s*h\.\s*g\./g],
  ['ek', /\beingetragene[rn]? kauf(?:mann|frau)\b|\be\.\s*(?:k|kfm|kfr)\.?(?=\W|$)|\bek\b/g],
  ['ug', /\bug\b/g],
];

/** Lower case with ä→ae, ö→oe, ü→ue, ß→ss and other accents stripped; punctuation kept. */
export function foldCase(text: string): string {
  return text
    .toLowerCase()
    .replace(/ä/g, 'ae')
    .replace(/ö/g, 'oe')
    .replace(/ü/g, 'ue')
    .replace(/ß/g, 'ss')
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '');
}

/** Folded words of `text`: "&" and "+" read as "und", other punctuation separates words. */
export function words(text: string): string[] {
  return foldCase(text)
    .replace(/[&+]/g, ' und ')
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 0);
}

/** A company name split into its legal form and the distinct words of the rest. */
export interface NormalisedName {
  readonly legalForm: LegalFormKey | undefined;
  readonly tokens: readonly string[];
}

/** Finds the legal form (first match by specificity), removes it, and splits the rest. */
export function normaliseCompanyName(name: string): NormalisedName {
  let rest = ` ${foldCase(name)} `;
  let legalForm: LegalFormKey | undefined;
  for (const [key, pattern] of LEGAL_FORM_PATTERNS) {
    const replaced = rest.replace(pattern, ' ');
    if (replaced !== rest) {
      legalForm ??= key;
      rest = replaced;
    }
  }
  return { legalForm, tokens: [...new Set(words(rest))] };
}

/** Street for comparison: folded, "str." / "strasse" / "straße" alike, words joined by one space. */
export function normaliseStreet(street: string): string {
  return words(foldCase(street).replace(/str\.(?=\s|\d|$)/g, 'strasse')).join(' ');
}

/** Collapses inner whitespace and trims, for the "input identical to hit" test. */
export function squash(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}
