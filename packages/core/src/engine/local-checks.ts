import { localityIdentificationViolation, validateAddressRequest, validateCompanyBody } from '../schemas/index.js';
import type { Violation } from '../schemas/index.js';
import type { RequestFields } from './record-mapping.js';
import type { Mode, RecordResult } from './types.js';

/**
 * The contract's rules a request must meet before it may be sent (contract 2.1, 4.7): locality
 * identification and country for addresses, each search method's mandatory fields for companies.
 * An empty list means the request may be sent.
 */
export function localViolations(mode: Mode, fields: RequestFields): Violation[] {
  if (mode !== 'address') return validateCompanyBody(mode, fields);
  // The common case without the schema (it runs for every record): fields from `mapRecord` are
  // strings of the address fields only, so the schema's checks come down to the country code and
  // the locality rule. Anything else goes through the schema, which names every violation.
  const country = fields['country'];
  if ((country === undefined || COUNTRY_CODE.test(country)) && localityIdentificationViolation(fields) === undefined) return [];
  return validateAddressRequest(fields);
}

/** The rule of `CountryCodeSchema`. */
const COUNTRY_CODE = /^[A-Z]{2}$/;

/** The result of a record refused locally: `invalid-input`, no call made. */
export function localRefusal(violations: Violation[]): RecordResult {
  const names = [...new Set(violations.map((v) => v.fieldName))].join(', ');
  return {
    status: 'invalid-input',
    error: {
      code: 'local-validation',
      message: `refused before sending: ${names} (fix the input or its column mapping)`,
      violations: violations.map((v) => ({ fieldName: v.fieldName, message: v.message })),
    },
    source: 'local',
  };
}
