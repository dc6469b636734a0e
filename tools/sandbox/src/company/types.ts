/** Status of a register entry (contract 3). */
export type TrStatus = 'active' | 'inactive';

/** Search methods of `/companies/v2` (contract 4.7). */
export type SearchMethod = 'company' | 'tr' | 'vat';

/** One entry of the sandbox's commercial register; fields exactly as contract 2.3. */
export interface CompanyRecord {
  readonly id: number;
  readonly company: string;
  /** Postcode as a JSON number, as in the contract's samples (so 04103 is 4103). */
  readonly zip: number;
  readonly city: string;
  /** Street and house number. */
  readonly street: string;
  readonly trCourt: string;
  /** HRB for corporations (GmbH, UG, AG, SE), HRA for partnerships and merchants (KG, OHG, e.K.). */
  readonly trType: string;
  readonly trNo: number;
  readonly trStatus: TrStatus;
}

/** A register entry as returned in `companies`, with how it was found. */
export interface CompanyHit extends CompanyRecord {
  readonly searchMethod: SearchMethod;
  /** 1–100; 100 only when every given input field equals the hit's field. */
  readonly searchScore: number;
}

/** What the HTTP layer sends back for one request. */
export interface CompanyResponse {
  readonly status: number;
  /** The 2.4 envelope. */
  readonly body: object;
  /** Value of `X-Total-Count`, set on 200 responses that carry `companies`. */
  readonly totalCount?: number;
}

/** The company validation service behind `POST /companies/v2`, after authentication. */
export interface CompanyService {
  /**
   * Answers one request. `query` holds the URL's search parameters, `body` the parsed JSON
   * (undefined when the body was not JSON), `path` the request path echoed in error envelopes.
   */
  handle(query: URLSearchParams, body: unknown, path: string): CompanyResponse;
  /** The whole register, in id order (for tests and fixtures). */
  readonly companies: readonly CompanyRecord[];
}

/** Options of {@link CompanyService} construction. */
export interface CompanyServiceOptions {
  /** PRNG seed; the same seed gives the same register. Default 1. */
  seed?: number;
  /** Number of register entries. Default 5000. */
  size?: number;
}
