import { MODE_FIELDS } from '@dq/core/engine';
import type { Mode } from '@dq/core';
import type { MappedColumn } from './preflight.js';

const POSTAL = ['postalcode', 'postcode', 'zip', 'zipcode', 'plz', 'postleitzahl', 'cap', 'cp', 'postal'];
const TOWN = ['locality', 'city', 'town', 'ort', 'stadt', 'place', 'municipality', 'village', 'ville', 'citta', 'cityname'];

/**
 * Column names (lower case, letters and digits only) that commonly hold a request field. Only
 * used to point at a mapping the user probably meant; nothing is mapped from them unasked.
 */
const ALIASES: Readonly<Record<string, readonly string[]>> = {
  street: ['street', 'streetname', 'strasse', 'straße', 'str', 'road', 'rue', 'calle'],
  houseNumber: ['housenumber', 'houseno', 'housenr', 'hausnr', 'hausnummer', 'hnr', 'nr', 'no', 'number', 'streetnumber', 'buildingnumber'],
  addressLine: ['addressline', 'addressline1', 'address', 'address1', 'addr', 'adresse', 'streetaddress'],
  postalCode: POSTAL,
  locality: TOWN,
  localityLine: ['localityline', 'cityline', 'zipcity', 'plzort', 'postcodecity'],
  country: ['country', 'countrycode', 'countryiso', 'land', 'iso', 'cc'],
  company: ['company', 'companyname', 'firm', 'firma', 'organisation', 'organization', 'businessname'],
  zip: POSTAL,
  city: TOWN,
  trCourt: ['trcourt', 'court', 'registercourt', 'registergericht'],
  trType: ['trtype', 'registertype', 'registerart'],
  trNo: ['trno', 'registernumber', 'registernr', 'registerno', 'hrb', 'hrnr'],
  vatId: ['vatid', 'vat', 'vatnumber', 'vatno', 'ustid', 'ustidnr', 'taxid'],
};

const normal = (name: string): string => name.toLowerCase().replace(/[^a-z0-9ß]/g, '');

/**
 * Fields of `mode` left out of `mapped` for which the table has a column under a recognisable
 * name (house_no, zip, city, …) not used for another field.
 */
export function unmappedLookalikes(mode: Mode, columnNames: readonly string[], mapped: readonly MappedColumn[]): { field: string; column: string }[] {
  const used = new Set(mapped.map((m) => m.column));
  const taken = new Set(mapped.map((m) => m.field));
  const found: { field: string; column: string }[] = [];
  for (const field of MODE_FIELDS[mode] as readonly string[]) {
    if (taken.has(field)) continue;
    for (const alias of ALIASES[field] ?? []) {
      const column = columnNames.find((c) => !used.has(c) && normal(c) === alias);
      if (column !== undefined) {
        found.push({ field, column });
        used.add(column);
        break;
      }
    }
  }
  return found;
}

/** `--map` text for the mapped columns plus `extra`, in the mode's field order. */
export function mapFlag(mode: Mode, mapped: readonly { field: string; column: string }[]): string {
  const order = MODE_FIELDS[mode] as readonly string[];
  return [...mapped]
    .sort((a, b) => order.indexOf(a.field) - order.indexOf(b.field))
    .map((m) => `${m.field}=${m.column}`)
    .join(',');
}

/** The hint when --map was not given and the table has columns that look like fields left out. */
export function autoMappingHint(mode: Mode, table: string, mapped: readonly MappedColumn[], lookalikes: readonly { field: string; column: string }[]): string {
  const now = mapFlag(mode, mapped);
  const left = lookalikes.map((l) => `${l.column} (${l.field})`).join(', ');
  return (
    `no --map given, so only columns named like ${mode} fields were mapped (${now}); ${table} also has ${left}, which were not. ` +
    `To use them: --map ${mapFlag(mode, [...mapped, ...lookalikes])}`
  );
}

/** The hint when every row of the first page came back invalid-input. */
export function allInvalidHint(mode: Mode, rows: number, mapped: readonly MappedColumn[], lookalikes: readonly { field: string; column: string }[]): string {
  const head = `every row of the first page (${rows}) came back invalid-input: the mapped columns (${mapFlag(mode, mapped)}) do not hold enough for ${mode === 'address' ? 'an address' : `a ${mode}`} check.`;
  if (lookalikes.length > 0) return `${head} The table has columns that look like the missing fields: --map ${mapFlag(mode, [...mapped, ...lookalikes])}`;
  const missing = (MODE_FIELDS[mode] as readonly string[]).filter((f) => !mapped.some((m) => m.field === f));
  return `${head} Map the columns that hold ${missing.join(', ')} with --map field=column,…`;
}
