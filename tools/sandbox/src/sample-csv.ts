import { formatCsvLine } from '@dq/core/review';
import { generateDirtyInputs } from './address/index.js';
import { SURNAMES } from './company/register-data.js';
import { mulberry32 } from './prng.js';

/** Columns of the shipped demo sample (a German CRM export: `;`-separated, UTF-8). */
export const SAMPLE_COLUMNS = ['kundennr', 'name', 'strasse', 'plz', 'ort', 'land', 'telefon', 'angelegt_am'] as const;

/** The `--map` that reads the sample. */
export const SAMPLE_MAP = { addressLine: 'strasse', postalCode: 'plz', locality: 'ort', country: 'land' } as const;

const FIRST = [
  'Anna',
  'Lukas',
  'Marie',
  'Jonas',
  'Sophie',
  'Leon',
  'Lea',
  'Felix',
  'Hannah',
  'Paul',
  'Emma',
  'Maximilian',
  'Lena',
  'Elias',
  'Mia',
  'Jürgen',
  'Sabine',
  'Uwe',
  'Birgit',
  'Günter',
];
/** The 20 most frequent of the register's family names. */
const LAST = SURNAMES.slice(0, 20);
const FIRMS = ['GmbH', 'GmbH & Co. KG', 'AG', 'e.K.', 'OHG'];
const AREA = ['30', '40', '89', '221', '69', '711', '211', '341', '351', '511'];

/**
 * A deterministic dirty sample of `rows` German customer addresses, as CSV text: the sandbox's
 * dirty inputs (typos, wrong postal codes, abbreviations, ambiguous streets, unknown addresses)
 * in a CRM-like layout, with about 10 % of addresses repeated by other customers.
 */
export function makeSampleCsv(rows = 1000, seed = 7): string {
  const random = mulberry32(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const inputs = generateDirtyInputs(rows, { seed, country: 'DE' });
  let csv = formatCsvLine(SAMPLE_COLUMNS, ';');
  for (let i = 0; i < rows; i++) {
    // Some customers share an address with an earlier one (colleagues, family): dedup saves those calls.
    const source = i > 20 && random() < 0.1 ? inputs[Math.floor(random() * i)] : inputs[i];
    const input = (source ?? inputs[i])!.input;
    let plz = input.postalCode ?? '';
    let ort = input.locality ?? '';
    if (input.localityLine !== undefined) {
      const m = /^(\d{4,5})\s+(.+)$/.exec(input.localityLine.trim());
      plz = m?.[1] ?? '';
      ort = m?.[2] ?? input.localityLine;
    }
    const strasse = input.addressLine ?? [input.street, input.houseNumber].filter(Boolean).join(' ');
    const person = `${pick(FIRST)} ${pick(LAST)}`;
    const name = random() < 0.25 ? `${pick(LAST)} ${pick(FIRMS)}` : person;
    const telefon = random() < 0.7 ? `+49 ${pick(AREA)} ${String(Math.floor(random() * 9_000_000) + 1_000_000)}` : '';
    const day = new Date(Date.UTC(2015, 0, 1) + Math.floor(random() * 3650) * 86_400_000).toISOString().slice(0, 10);
    csv += formatCsvLine([`K${String(100_000 + i)}`, name, strasse, plz, ort, input.country, telefon, day], ';');
  }
  return csv;
}
