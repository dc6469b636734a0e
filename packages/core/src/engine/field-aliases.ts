import type { Mode } from './types.js';
import { MODE_FIELDS } from './record-mapping.js';

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

/** A request field and the input column (CSV header name, table column) it is read from. */
export interface FieldColumn {
  field: string;
  column: string;
}

/**
 * Fields of `mode` left out of `mapped` for which the input has a column under a recognisable
 * name (house_no, zip, city, strasse, plz, ort, …) not used for another field.
 */
export function unmappedLookalikes(mode: Mode, columnNames: readonly string[], mapped: readonly FieldColumn[]): FieldColumn[] {
  const used = new Set(mapped.map((m) => m.column));
  const taken = new Set(mapped.map((m) => m.field));
  const found: FieldColumn[] = [];
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
export function mapFlag(mode: Mode, mapped: readonly FieldColumn[]): string {
  const order = MODE_FIELDS[mode] as readonly string[];
  return [...mapped]
    .sort((a, b) => order.indexOf(a.field) - order.indexOf(b.field))
    .map((m) => `${m.field}=${m.column}`)
    .join(',');
}

/**
 * The hint when `--map` was not given and the input has columns that look like fields left out:
 * `holder` is what has them ("the header", a table's name).
 */
export function autoMappingHint(mode: Mode, holder: string, mapped: readonly FieldColumn[], lookalikes: readonly FieldColumn[]): string {
  const left = lookalikes.map((l) => `${l.column} (${l.field})`).join(', ');
  return (
    `no --map given, so only columns named like ${mode} fields were mapped (${mapFlag(mode, mapped)}); ${holder} also has ${left}, which were not. ` +
    `To use them: --map ${mapFlag(mode, [...mapped, ...lookalikes])}`
  );
}
