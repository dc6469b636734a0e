/** Stable codes of errors the address engine throws. */
export type AddressEngineErrorCode = 'country-not-available';

/**
 * Thrown for a well-formed country code that has no reference data; the server answers it with
 * 500 "Country not available" (contract 7.1, fragment `country-not-available`).
 */
export class CountryNotAvailableError extends Error {
  readonly code: AddressEngineErrorCode = 'country-not-available';
  readonly country: string;

  constructor(country: string, available: readonly string[]) {
    super(`Country not available: no reference data for "${country}"; the sandbox has ${available.join(', ')}.`);
    this.name = 'CountryNotAvailableError';
    this.country = country;
  }
}
