/**
 * The sandbox's address reference data: towns from reference-towns-*.ts, each with streets drawn
 * from a name pool and laid out by a generator seeded from the town's name, so every process
 * builds identical data. Streets have odd and even house-number sides; about one in five crosses
 * two or three postal-code areas by house number, some have their two sides in different areas,
 * and in larger towns some names exist twice in different areas (as "Hauptstraße" does in Berlin).
 */
import { normaliseKey } from './normalise.js';
import { createRandom, hashString } from '../prng.js';
import type { Random } from '../prng.js';
import { AUSTRIAN_STREET_NAMES, GERMAN_STREET_NAMES } from './reference-street-names.js';
import { AUSTRIAN_TOWNS } from './reference-towns-at.js';
import { GERMAN_TOWNS } from './reference-towns-de.js';
import type { TownSeed } from './reference-towns-de.js';

/** A WGS84 position in degrees. */
export interface LatLon {
  lat: number;
  lon: number;
}

/** One side of a street within one postal code: every `step` number from `from` to `to`. */
export interface RefSegment {
  postalCode: string;
  from: number;
  to: number;
  step: 'even' | 'odd';
}

export interface RefStreet {
  id: number;
  town: RefTown;
  name: string;
  key: string;
  abbreviation?: string;
  segments: RefSegment[];
  /** Distinct postal codes of the segments, in order of first appearance. */
  postalCodes: string[];
  /** Highest house number on either side. */
  maxNumber: number;
  start: LatLon;
  end: LatLon;
}

export interface RefTown {
  id: number;
  country: string;
  name: string;
  key: string;
  abbreviation?: string;
  /** Keys of other accepted spellings (abbreviation, aliases). */
  aliasKeys: string[];
  centre: LatLon;
  postalCodes: string[];
  /** District (candidate `subLocality`) per postal code, where the town has districts. */
  districts: ReadonlyMap<string, string>;
  streets: RefStreet[];
  streetsByKey: ReadonlyMap<string, RefStreet[]>;
  /** Distinct street keys grouped by length, for bounded typo search. */
  streetKeysByLength: ReadonlyMap<number, string[]>;
}

export interface ReferenceData {
  countries: readonly string[];
  townsByCountry: ReadonlyMap<string, RefTown[]>;
}

const KM_PER_DEGREE = 111.32;

function offset(from: LatLon, northKm: number, eastKm: number): LatLon {
  const lat = from.lat + northKm / KM_PER_DEGREE;
  const lon = from.lon + eastKm / (KM_PER_DEGREE * Math.cos((from.lat * Math.PI) / 180));
  return { lat, lon };
}

function streetAbbreviation(name: string): string | undefined {
  const short = name.replace(/straße/g, 'str.').replace(/Straße/g, 'Str.');
  return short === name ? undefined : short;
}

function sides(postalCode: string, from: number, oddLimit: number, evenLimit: number): RefSegment[] {
  const firstOdd = from % 2 === 1 ? from : from + 1;
  const firstEven = from % 2 === 0 ? from : from + 1;
  const oddTo = oddLimit % 2 === 1 ? oddLimit : oddLimit - 1;
  const evenTo = evenLimit % 2 === 0 ? evenLimit : evenLimit - 1;
  const out: RefSegment[] = [];
  if (firstOdd <= oddTo) out.push({ postalCode, from: firstOdd, to: oddTo, step: 'odd' });
  if (firstEven <= evenTo) out.push({ postalCode, from: firstEven, to: evenTo, step: 'even' });
  return out;
}

function lengths(random: Random, long: boolean): { oddMax: number; evenMax: number } {
  const length = long ? random.int(60, 200) : 8 + Math.floor(random.next() ** 1.5 * 150);
  const oddMax = length % 2 === 1 ? length : length - 1;
  const evenRaw = Math.max(2, length - random.int(0, 8));
  return { oddMax, evenMax: evenRaw % 2 === 0 ? evenRaw : evenRaw - 1 };
}

/** Segments of a street whose numbers change postal code at each split point. */
function crossingSegments(random: Random, codes: string[], oddMax: number, evenMax: number): RefSegment[] {
  const top = Math.max(oddMax, evenMax);
  const parts = codes.length;
  const splits: number[] = [];
  for (let k = 1; k < parts; k++) splits.push(Math.round((top * k) / parts) + random.int(-3, 3));
  const out: RefSegment[] = [];
  let from = 1;
  for (let k = 0; k < parts; k++) {
    const to = k < parts - 1 ? (splits[k] as number) - 1 : top;
    out.push(...sides(codes[k] as string, from, Math.min(to, oddMax), Math.min(to, evenMax)));
    from = to + 1;
  }
  return out;
}

function buildTown(seed: TownSeed, country: string, pool: readonly string[], ids: { town: number; street: number }): RefTown {
  const random = createRandom(hashString(`${country}:${seed.name}`));
  const entries = seed.postalCodes.split(',').map((entry) => entry.trim());
  const postalCodes = entries.map((entry) => entry.split(' ')[0] as string);
  const districts = new Map<string, string>();
  for (const entry of entries) {
    const space = entry.indexOf(' ');
    if (space > 0) districts.set(entry.slice(0, space), entry.slice(space + 1));
  }
  const aliasKeys = [seed.abbreviation, ...(seed.aliases ?? [])].filter((alias): alias is string => alias !== undefined).map(normaliseKey);
  const town: RefTown = {
    id: ids.town++,
    country,
    name: seed.name,
    key: normaliseKey(seed.name),
    aliasKeys,
    centre: { lat: seed.lat, lon: seed.lon },
    postalCodes,
    districts,
    streets: [],
    streetsByKey: new Map(),
    streetKeysByLength: new Map(),
    ...(seed.abbreviation === undefined ? {} : { abbreviation: seed.abbreviation }),
  };
  // Postal areas spread around the centre on a sunflower pattern; big towns spread wider.
  const spreadKm = Math.min(9, 0.8 + 0.3 * postalCodes.length);
  const areaCentre = new Map<string, LatLon>();
  postalCodes.forEach((code, i) => {
    const radius = spreadKm * Math.sqrt((i + 0.5) / postalCodes.length);
    const angle = i * 2.399963;
    areaCentre.set(code, offset(town.centre, radius * Math.cos(angle), radius * Math.sin(angle)));
  });
  // Signature streets are written "Name@postal code" and start in that (their real) area.
  const homeCode = new Map<string, string>();
  const signature = (seed.streets ?? []).map((entry) => {
    const [name, code] = entry.split('@') as [string, string | undefined];
    if (code !== undefined && !postalCodes.includes(code)) throw new Error(`reference data: ${name} in ${seed.name} has unknown postal code ${code}`);
    if (code !== undefined) homeCode.set(name, code);
    return name;
  });
  const wanted = Math.min(100, Math.max(18, 14 + 5 * postalCodes.length)) + signature.length;
  const seen = new Set<string>();
  const names: string[] = [];
  for (const name of [...signature, ...random.shuffle(pool)]) {
    const key = normaliseKey(name);
    if (seen.has(key) || names.length >= wanted) continue;
    seen.add(key);
    names.push(name);
  }
  const addStreet = (name: string, segments: RefSegment[]): void => {
    const codes = [...new Set(segments.map((s) => s.postalCode))];
    const maxNumber = Math.max(...segments.map((s) => s.to));
    const anchor = areaCentre.get(codes[0] as string) ?? town.centre;
    const start = offset(anchor, random.next() - 0.5, random.next() - 0.5);
    const angle = random.next() * Math.PI;
    const lengthKm = 0.05 + maxNumber * 0.007;
    const end = offset(start, lengthKm * Math.cos(angle), lengthKm * Math.sin(angle));
    const abbreviation = streetAbbreviation(name);
    town.streets.push({
      id: ids.street++,
      town,
      name,
      key: normaliseKey(name),
      segments,
      postalCodes: codes,
      maxNumber,
      start,
      end,
      ...(abbreviation === undefined ? {} : { abbreviation }),
    });
  };
  const distance = (a: string, b: string): number => {
    const p = areaCentre.get(a) as LatLon;
    const q = areaCentre.get(b) as LatLon;
    return (p.lat - q.lat) ** 2 + (p.lon - q.lon) ** 2;
  };
  // A street runs on into a neighbouring postal area, not across town.
  const others = (code: string, n: number): string[] =>
    postalCodes
      .filter((c) => c !== code)
      .sort((a, b) => distance(code, a) - distance(code, b))
      .slice(0, n);
  for (const name of names) {
    const { oddMax, evenMax } = lengths(random, homeCode.has(name));
    const code = homeCode.get(name) ?? random.pick(postalCodes);
    const roll = postalCodes.length === 1 ? 0 : random.next();
    if (roll > 0.58 && roll <= 0.8 && Math.max(oddMax, evenMax) >= 30) {
      const parts = Math.max(oddMax, evenMax) >= 90 && postalCodes.length >= 3 && random.next() < 0.4 ? 3 : 2;
      addStreet(name, crossingSegments(random, [code, ...others(code, parts - 1)], oddMax, evenMax));
    } else if (roll > 0.8 && roll <= 0.88) {
      const [evenCode] = others(code, 1);
      addStreet(name, [
        { postalCode: code, from: 1, to: oddMax, step: 'odd' },
        { postalCode: evenCode as string, from: 2, to: evenMax, step: 'even' },
      ]);
    } else {
      addStreet(name, sides(code, 1, oddMax, evenMax));
      if (roll > 0.88 && !homeCode.has(name)) {
        const twin = lengths(random, false);
        const far = random.pick(postalCodes.filter((c) => c !== code));
        addStreet(name, sides(far, 1, Math.max(twin.oddMax, 21), Math.max(twin.evenMax, 20)));
      }
    }
  }
  const byKey = new Map<string, RefStreet[]>();
  const byLength = new Map<number, string[]>();
  for (const street of town.streets) {
    const list = byKey.get(street.key);
    if (list) list.push(street);
    else {
      byKey.set(street.key, [street]);
      const keys = byLength.get(street.key.length) ?? [];
      keys.push(street.key);
      byLength.set(street.key.length, keys);
    }
  }
  town.streetsByKey = byKey;
  town.streetKeysByLength = byLength;
  return town;
}

let cached: ReferenceData | undefined;

/** The reference data, built on first use (a few milliseconds) and shared by every matcher. */
export function referenceData(): ReferenceData {
  if (cached) return cached;
  const ids = { town: 0, street: 0 };
  const townsByCountry = new Map<string, RefTown[]>([
    ['DE', GERMAN_TOWNS.map((seed) => buildTown(seed, 'DE', GERMAN_STREET_NAMES, ids))],
    ['AT', AUSTRIAN_TOWNS.map((seed) => buildTown(seed, 'AT', AUSTRIAN_STREET_NAMES, ids))],
  ]);
  cached = { countries: [...townsByCountry.keys()], townsByCountry };
  return cached;
}

/** The position of house number `n` on a street: interpolated along it, odd and even sides apart. */
export function housePosition(street: RefStreet, n: number): LatLon {
  const t = street.maxNumber <= 1 ? 0.5 : Math.min(1, Math.max(0, (n - 1) / (street.maxNumber - 1)));
  const along = {
    lat: street.start.lat + t * (street.end.lat - street.start.lat),
    lon: street.start.lon + t * (street.end.lon - street.start.lon),
  };
  const sideKm = n % 2 === 1 ? 0.012 : -0.012;
  return offset(along, sideKm, sideKm);
}
