/**
 * Text normalisation shared by the reference indexes and the matcher. Two spellings that differ
 * only in case, spacing, punctuation, ß/ss, umlaut transcription (ä/ae, ö/oe, ü/ue) or the
 * abbreviation "str." of "straße" have the same key.
 */

const UMLAUTS: Readonly<Record<string, string>> = { ß: 'ss', ä: 'ae', ö: 'oe', ü: 'ue' };

/** The comparison key of a street or town name: lower-case ASCII letters and digits only. */
export function normaliseKey(text: string): string {
  let folded = text.toLowerCase();
  // Unicode normalisation is the costly step; most input is ASCII plus precomposed umlauts.
  if (/[^\x00-\x7fßäöü]/.test(folded)) {
    folded = folded
      .normalize('NFC')
      .replace(/[ßäöü]/g, (ch) => UMLAUTS[ch] ?? ch)
      .normalize('NFD')
      .replace(/[\u0300-\u036f]/g, '');
  } else {
    folded = folded.replace(/[ßäöü]/g, (ch) => UMLAUTS[ch] ?? ch);
  }
  let key = '';
  for (const token of folded.split(/[^a-z0-9]+/)) {
    if (token === '') continue;
    // "Hauptstr." and "Str. des 17. Juni" abbreviate "straße", already folded to "strasse".
    key += token.endsWith('str') ? `${token}asse` : token;
  }
  return key;
}

/** Trims and collapses runs of white space. */
export function cleanSpaces(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

/** The digits of a postal code written as "10115", " 10 115", "D-10115" or "A-1010". */
export function normalisePostalCode(raw: string): string {
  return raw.replace(/\s+/g, '').replace(/^[A-Za-z]{1,2}-/, '');
}

/** A parsed house number: the integer and an optional lower-case letter suffix. */
export interface ParsedHouseNumber {
  number: number;
  suffix: string;
  /** The reference spelling, e.g. `12a`. */
  canonical: string;
  /** True when text after the number and suffix (such as "-14") had to be dropped. */
  truncated: boolean;
}

/** Parses "12", "12a", "12 A" or "12-14" (the first number counts); undefined when no number. */
export function parseHouseNumber(raw: string): ParsedHouseNumber | undefined {
  const match = /^(\d{1,5})\s*([a-z](?![a-z]))?(.*)$/i.exec(raw.trim());
  if (!match) return undefined;
  const number = Number(match[1]);
  if (number === 0) return undefined;
  const suffix = (match[2] ?? '').toLowerCase();
  return {
    number,
    suffix,
    canonical: `${number}${suffix}`,
    truncated: (match[3] ?? '').trim() !== '',
  };
}

/** Splits "Hauptstraße 12a" into street and house number; no number → the whole line is the street. */
export function splitAddressLine(line: string): { street: string; houseNumber?: string } {
  const match = /^(.*?\S)[\s,]+(\d{1,5}(?:\s?[a-z](?![a-z]))?(?:\s*[-/]\s*\d{1,5}[a-z]?)?)$/i.exec(line.trim());
  if (!match) return { street: line };
  return { street: match[1] ?? '', houseNumber: match[2] ?? '' };
}

/** Splits "10115 Berlin", "D-10115 Berlin" or "Berlin 10115" into postal code and town. */
export function splitLocalityLine(line: string): { postalCode?: string; locality?: string } {
  const trimmed = line.trim();
  const leading = /^((?:[A-Za-z]{1,2}\s*-\s*)?\d{4,5})(?:[\s,]+(.*))?$/.exec(trimmed);
  if (leading) {
    const locality = leading[2]?.trim();
    return locality ? { postalCode: leading[1] ?? '', locality } : { postalCode: leading[1] ?? '' };
  }
  const trailing = /^(.*?\S)[\s,]+(\d{4,5})$/.exec(trimmed);
  if (trailing) return { postalCode: trailing[2] ?? '', locality: trailing[1] ?? '' };
  return trimmed === '' ? {} : { locality: trimmed };
}
