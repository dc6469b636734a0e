import { validateAddressRequest, validateCompanyBody } from '../schemas/index.js';
import type { Violation } from '../schemas/index.js';
import type { RequestFields } from './record-mapping.js';
import type { Mode, RecordResult } from './types.js';

/**
 * The contract's rules a request must meet before it may be sent (contract 2.1, 4.7): locality
 * identification and country for addresses, each search method's mandatory fields for companies.
 * An empty list means the request may be sent.
 */
export function localViolations(mode: Mode, fields: RequestFields): Violation[] {
  return mode === 'address' ? validateAddressRequest(fields) : validateCompanyBody(mode, fields);
}

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
