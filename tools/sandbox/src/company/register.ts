import { createRandom, type Random } from '../prng.js';
import { CITIES, INDUSTRIES, PREFIXES, STREETS, SURNAMES, TRADES, type CityEntry } from './register-data.js';
import type { CompanyRecord } from './types.js';

interface LegalForm {
  readonly suffix: string;
  readonly trType: 'HRA' | 'HRB';
  /** Relative frequency among new entries. */
  readonly weight: number;
  readonly name: (rng: Random) => string;
}

const surname = (rng: Random): string => rng.pick(SURNAMES);
const secondSurname = (rng: Random, first: string): string => {
  let other = surname(rng);
  while (other === first) other = surname(rng);
  return other;
};
const initials = (rng: Random): string => Array.from({ length: rng.int(2, 3) }, () => String.fromCharCode(65 + rng.int(0, 25))).join('');

/** Names of corporations: "Müller Maschinenbau", "Rhein-Main Logistik", "KWS Anlagenbau"… */
function corporationName(rng: Random): string {
  const roll = rng.next();
  if (roll < 0.5) return `${surname(rng)} ${rng.pick(INDUSTRIES)}`;
  if (roll < 0.78) return `${rng.pick(PREFIXES)} ${rng.pick(INDUSTRIES)}`;
  if (roll < 0.9) {
    const first = surname(rng);
    return `${first} & ${secondSurname(rng, first)} ${rng.pick(INDUSTRIES)}`;
  }
  return `${initials(rng)} ${rng.pick(INDUSTRIES)}`;
}

function partnershipName(rng: Random): string {
  const roll = rng.next();
  const first = surname(rng);
  if (roll < 0.35) return `${first} & Partner`;
  if (roll < 0.6) return `${first} & ${secondSurname(rng, first)}`;
  if (roll < 0.75) return `Gebrüder ${first}`;
  return `${first} ${rng.pick(INDUSTRIES)}`;
}

const LEGAL_FORMS: readonly LegalForm[] = [
  { suffix: 'GmbH', trType: 'HRB', weight: 50, name: corporationName },
  { suffix: 'UG (haftungsbeschränkt)', trType: 'HRB', weight: 7, name: corporationName },
  { suffix: 'AG', trType: 'HRB', weight: 5, name: corporationName },
  { suffix: 'SE', trType: 'HRB', weight: 1, name: corporationName },
  { suffix: 'GmbH & Co. KG', trType: 'HRA', weight: 12, name: corporationName },
  { suffix: 'KG', trType: 'HRA', weight: 8, name: partnershipName },
  { suffix: 'OHG', trType: 'HRA', weight: 5, name: partnershipName },
  {
    suffix: 'e.K.',
    trType: 'HRA',
    weight: 12,
    name: (rng) => (rng.next() < 0.7 ? `${rng.pick(TRADES)} ${surname(rng)}` : `${surname(rng)} ${rng.pick(INDUSTRIES)}`),
  },
];

function weighted<T extends { readonly weight: number }>(rng: Random, items: readonly T[]): T {
  const total = items.reduce((sum, item) => sum + item.weight, 0);
  let roll = rng.next() * total;
  for (const item of items) {
    roll -= item.weight;
    if (roll < 0) return item;
  }
  return items[items.length - 1] as T;
}

function houseNumber(rng: Random): string {
  const n = rng.int(1, 180);
  return rng.next() < 0.06 ? `${n}${rng.pick(['a', 'b', 'c'])}` : String(n);
}

/** Highest register number a court hands out, so small courts get small numbers. */
function maxTrNo(city: CityEntry, trType: 'HRA' | 'HRB'): number {
  const base = trType === 'HRB' ? 12_000 : 4_000;
  return base * Math.max(1, city.weight);
}

/**
 * Entries every register starts with, whatever the seed: names a demo or a test can rely on,
 * including a liquidated company whose name a new one took over (same name, one inactive).
 */
export const WELL_KNOWN_COMPANIES: readonly CompanyRecord[] = [
  {
    id: 900_001,
    company: 'Müller Maschinenbau GmbH',
    zip: 80331,
    city: 'München',
    street: 'Sendlinger Straße 12',
    trCourt: 'Amtsgericht München',
    trType: 'HRB',
    trNo: 10_234,
    trStatus: 'active',
  },
  {
    id: 900_002,
    company: 'Schmidt & Partner KG',
    zip: 20095,
    city: 'Hamburg',
    street: 'Mönckebergstraße 7',
    trCourt: 'Amtsgericht Hamburg',
    trType: 'HRA',
    trNo: 4_711,
    trStatus: 'active',
  },
  {
    id: 900_003,
    company: 'Bäckerei Weber e.K.',
    zip: 50667,
    city: 'Köln',
    street: 'Hohe Straße 52',
    trCourt: 'Amtsgericht Köln',
    trType: 'HRA',
    trNo: 1_234,
    trStatus: 'active',
  },
  {
    id: 900_004,
    company: 'Schneider Logistik GmbH & Co. KG',
    zip: 60311,
    city: 'Frankfurt am Main',
    street: 'Kaiserstraße 25',
    trCourt: 'Amtsgericht Frankfurt am Main',
    trType: 'HRA',
    trNo: 20_123,
    trStatus: 'active',
  },
  {
    id: 900_005,
    company: 'Hoffmann Elektrotechnik GmbH',
    zip: 10115,
    city: 'Berlin',
    street: 'Chausseestraße 10',
    trCourt: 'Amtsgericht Charlottenburg',
    trType: 'HRB',
    trNo: 98_765,
    trStatus: 'inactive',
  },
  {
    id: 900_006,
    company: 'Hoffmann Elektrotechnik GmbH',
    zip: 10117,
    city: 'Berlin',
    street: 'Friedrichstraße 100',
    trCourt: 'Amtsgericht Charlottenburg',
    trType: 'HRB',
    trNo: 154_321,
    trStatus: 'active',
  },
  {
    id: 900_007,
    company: 'Sachsen Verpackungen AG',
    zip: 4103,
    city: 'Leipzig',
    street: 'Augustusplatz 1',
    trCourt: 'Amtsgericht Leipzig',
    trType: 'HRB',
    trNo: 2_345,
    trStatus: 'active',
  },
];

/**
 * Builds the deterministic register: `size` companies from `seed` (same inputs, same register).
 * It starts with {@link WELL_KNOWN_COMPANIES}; about 10 % of the rest are inactive;
 * (trCourt, trType, trNo) is unique; ids ascend.
 */
export function generateRegister(seed: number, size: number): CompanyRecord[] {
  const rng = createRandom(seed);
  const records = WELL_KNOWN_COMPANIES.slice(0, size);
  const taken = new Set(records.map((r) => `${r.trCourt}|${r.trType}|${r.trNo}`));
  let id = 1_000_000 + rng.int(0, 99_999);
  while (records.length < size) {
    const form = weighted(rng, LEGAL_FORMS);
    const place = weighted(rng, CITIES);
    let trNo: number;
    do trNo = rng.int(100, maxTrNo(place, form.trType));
    while (taken.has(`${place.court}|${form.trType}|${trNo}`));
    taken.add(`${place.court}|${form.trType}|${trNo}`);
    id += rng.int(1, 40);
    records.push({
      id,
      company: `${form.name(rng)} ${form.suffix}`,
      zip: rng.pick(place.zips),
      city: place.city,
      street: `${rng.pick(STREETS)} ${houseNumber(rng)}`,
      trCourt: place.court,
      trType: form.trType,
      trNo,
      trStatus: rng.next() < 0.1 ? 'inactive' : 'active',
    });
  }
  return records;
}
