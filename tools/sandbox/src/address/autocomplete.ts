/**
 * Autocomplete over one country's streets (docs/platform-contract.md: the request shape is the project's own
 * choice). Every word of the query must start a word of the street, its town or its district,
 * and at least one must start a word of the street; a number of the country's postal-code length
 * filters by postal code, a shorter one is taken as the house number.
 */
import { referenceMatch, toCandidate } from './candidate.js';
import type { CountryIndex } from './country-index.js';
import type { Match } from './locate.js';
import { normaliseKey, normalisePostalCode, parseHouseNumber } from './normalise.js';
import type { RefStreet } from './reference-data.js';
import type { AutocompleteRequest, Candidate } from './types.js';

/** Most candidates one autocomplete answer holds. */
export const AUTOCOMPLETE_LIMIT = 10;

/** A street's searchable words, each preceded by a space, so `includes(' ' + prefix)` is a word-prefix test. */
interface SearchEntry {
  street: RefStreet;
  streetText: string;
  placeText: string;
}

const COLLATOR = new Intl.Collator('de');
const entryCache = new WeakMap<CountryIndex, SearchEntry[]>();

function wordsOf(text: string): string[] {
  return text
    .split(/[\s\-/().,]+/)
    .map(normaliseKey)
    .filter((word) => word !== '');
}

function searchEntries(index: CountryIndex): SearchEntry[] {
  let entries = entryCache.get(index);
  if (!entries) {
    entries = index.streets.map((street) => {
      const { town } = street;
      const districts = street.postalCodes.flatMap((code) => wordsOf(town.districts.get(code) ?? ''));
      const place = [town.key, ...town.aliasKeys, ...wordsOf(town.name), ...districts];
      return { street, streetText: ` ${[street.key, ...wordsOf(street.name)].join(' ')}`, placeText: ` ${place.join(' ')}` };
    });
    entryCache.set(index, entries);
  }
  return entries;
}

interface Query {
  words: string[];
  /** The words, each preceded by a space. */
  needles: string[];
  localityNeedle: string;
  streetPrefix: string;
  localityPrefix: string;
  postalPrefix: string;
  house: ReturnType<typeof parseHouseNumber>;
}

function parseQuery(index: CountryIndex, req: AutocompleteRequest): Query {
  const postalLength = index.towns[0]?.postalCodes[0]?.length ?? 5;
  const words: string[] = [];
  let postalPrefix = normalisePostalCode(req.postalCode ?? '');
  let house = req.houseNumber === undefined ? undefined : parseHouseNumber(req.houseNumber);
  for (const token of (req.query ?? '').split(/[\s,]+/)) {
    if (token === '') continue;
    if (/^\d+$/.test(token) && token.length === postalLength && postalPrefix === '') postalPrefix = token;
    else if (/^\d/.test(token) && house === undefined) house = parseHouseNumber(token);
    else words.push(...wordsOf(token));
  }
  const localityPrefix = normaliseKey(req.locality ?? '');
  return {
    words,
    needles: words.map((word) => ` ${word}`),
    house,
    postalPrefix,
    streetPrefix: normaliseKey(req.street ?? ''),
    localityPrefix,
    localityNeedle: ` ${localityPrefix}`,
  };
}

/** 0 when the street name starts with the first word, 1 when another word matched, undefined when no match. */
function rank(entry: SearchEntry, query: Query): number | undefined {
  const { street } = entry;
  if (query.localityPrefix !== '' && !entry.placeText.includes(query.localityNeedle)) return undefined;
  if (query.streetPrefix !== '' && !street.key.startsWith(query.streetPrefix)) return undefined;
  if (query.postalPrefix !== '' && !street.postalCodes.some((code) => code.startsWith(query.postalPrefix))) return undefined;
  if (query.words.length === 0) return query.streetPrefix === '' ? undefined : 0;
  let streetHit = query.streetPrefix !== '';
  for (const needle of query.needles) {
    if (entry.streetText.includes(needle)) streetHit = true;
    else if (!entry.placeText.includes(needle)) return undefined;
  }
  if (!streetHit) return undefined;
  return street.key.startsWith(query.words[0] as string) ? 0 : 1;
}

function matchesOf(street: RefStreet, query: Query): Match[] {
  const house = query.house;
  if (house) {
    const step = house.number % 2 === 1 ? 'odd' : 'even';
    return street.segments
      .filter((s) => s.step === step && s.from <= house.number && house.number <= s.to && s.postalCode.startsWith(query.postalPrefix))
      .map((s) => referenceMatch(street, s.postalCode, { text: house.canonical, value: house.number }));
  }
  return street.postalCodes
    .filter((code) => code.startsWith(query.postalPrefix))
    .map((code) =>
      referenceMatch(
        street,
        code,
        undefined,
        street.segments.filter((s) => s.postalCode === code),
      ),
    );
}

/** Up to {@link AUTOCOMPLETE_LIMIT} candidates for a partial address; `_meta` is not produced. */
export function autocompleteAddresses(index: CountryIndex, req: AutocompleteRequest, include: ReadonlySet<string>): { results: Candidate[] } {
  const query = parseQuery(index, req);
  const ranked: { street: RefStreet; rank: number }[] = [];
  for (const entry of searchEntries(index)) {
    const value = rank(entry, query);
    if (value !== undefined) ranked.push({ street: entry.street, rank: value });
  }
  // Towns are listed largest first, so their order is a fair popularity proxy.
  ranked.sort((a, b) => a.rank - b.rank || a.street.town.id - b.street.town.id || COLLATOR.compare(a.street.name, b.street.name));
  const results: Candidate[] = [];
  for (const { street } of ranked) {
    for (const match of matchesOf(street, query)) {
      if (results.length >= AUTOCOMPLETE_LIMIT) return { results };
      results.push(toCandidate(match, include));
    }
  }
  return { results };
}
