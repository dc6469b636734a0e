/** Result classes of contract 2.2: A exact, B normalised, C corrected, D probable, E ambiguous, F none. */
export type ResultClass = 'A' | 'B' | 'C' | 'D' | 'E' | 'F';

/**
 * An address validation request body (contract 2.1) without `_options`. Every field is a string;
 * the server has already applied the 400 rules (localityIdentificationSet, country syntax).
 */
export interface AddressInput {
  street?: string;
  houseNumber?: string;
  /** Street and house number in one field, used instead of `street` + `houseNumber`. */
  addressLine?: string;
  postalCode?: string;
  locality?: string;
  /** Postal code and town in one field, used instead of `postalCode` + `locality`. */
  localityLine?: string;
  /** Two-letter upper-case country code. */
  country: string;
}

/** One house-number range of a street inside one postal code area (contract 2.2). */
export interface HouseNumberRange {
  from: string;
  to: string;
  step: 'even' | 'odd';
}

/** Precision of a coordinate, as listed in docs/platform-contract.md. */
export type CoordinatePrecision = 'locality' | 'street' | 'house-number-range' | 'house-number';

/** How an input field matched the reference data (`_meta.fields.<name>.status`). */
export type FieldStatus = 'IDENTIFIED' | 'NORMALIZED' | 'CORRECTED' | 'UNVERIFIED' | 'MISSING';

/** How much an input field matters for the match (`_meta.fields.<name>.relevance`). */
export type FieldRelevance = 'MANDATORY' | 'IMPORTANT';

/** Per-input-field match information, present when `metadata` was requested. */
export interface CandidateMeta {
  fields: Record<string, { relevance: FieldRelevance; status: FieldStatus }>;
}

/** A candidate address, shaped as contract 2.2 plus the docs/platform-contract.md facts. */
export interface Candidate {
  addressType: 'delivery';
  country: string;
  postalCode: string;
  locality: string;
  localityAbbreviation?: string;
  subLocality?: string;
  street: string;
  streetAbbreviation?: string;
  /** Empty when the input had no house number and none could be chosen. */
  houseNumber: string;
  houseNumberChoice?: HouseNumberRange[];
  coordinates?: { wgs84: { precision: CoordinatePrecision; lat: number; lon: number } };
  _meta?: CandidateMeta;
}

/** The body of a 200 validate response (contract 2.2). */
export interface MatchResult {
  resultClass: ResultClass;
  results: Candidate[];
}

/** An autocomplete request body (docs/platform-contract.md: the project's own choice). */
export interface AutocompleteRequest {
  country: string;
  /** Free text such as `"Hauptstr 12 Berl"`; words match prefixes of street, town and district. */
  query?: string;
  postalCode?: string;
  locality?: string;
  street?: string;
  houseNumber?: string;
}

/** The matching engine behind the sandbox's validate, batch/sync and autocomplete endpoints. */
export interface AddressMatcher {
  /** Country codes with reference data, e.g. `['DE', 'AT']`. */
  readonly countries: readonly string[];
  /**
   * Matches one address. `include` holds `_options.include` values; `coordinates-wgs84` and
   * `metadata` are honoured, others ignored. Throws {@link CountryNotAvailableError}
   * (code `country-not-available`) for a country without reference data.
   */
  validate(input: AddressInput, include: ReadonlySet<string>): MatchResult;
  /** At most 10 candidates whose street, town or postal code start with the query's words. */
  autocomplete(req: AutocompleteRequest, include?: ReadonlySet<string>): { results: Candidate[] };
}
