import { CompanyQuerySchema, validateCompanyBody } from '../schemas/index.js';
import type { CompanyBodies, CompanyQuery, CompanyRecord, TrSearchBody, CompanySearchBody, VatCheckBody, VatResult } from '../schemas/index.js';
import { violationsFromZod } from '../schemas/index.js';
import type { Transport, TransportResponse } from '../transport/types.js';
import { COMPANY_PATH, checkVat, searchCompanies, totalCount } from './calls.js';
import { refuseInvalid } from './call-options.js';
import type { CallOptions } from './call-options.js';

export { COMPANY_PATH };

/**
 * Query parameters of a company call except `searchMethod` (set by the method called). Numbers and
 * booleans may be given as strings (`"50"`, `"true"`); they are checked before sending.
 */
export interface CompanyParams {
  /** 1–100, platform default 85. */
  minScore?: number | string;
  includeDeleted?: boolean | string;
  /** 1–50, platform default 50. */
  limit?: number | string;
  /** ≥ 0, platform default 0. */
  offset?: number | string;
  lang?: 'de' | 'en' | 'fr';
}

/** A page of hits of a `company` or `tr` search. */
export interface CompanySearchResult extends TransportResponse<{ status: number; companies: CompanyRecord[] }> {
  /** `X-Total-Count`: the number of hits in this answer (the list's length if the header is absent). */
  totalCount: number;
}

/** Options of {@link CompanyClient.pages}. */
export interface PagingOptions extends CallOptions {
  /** Hits per page, 1–50 (default 50). */
  pageSize?: number;
  /** Stop after this many pages (default 20), a guard against a server that never runs dry. */
  maxPages?: number;
}

/**
 * Typed calls of company validation (POST `{realtime_url}/companies/v2`). Query parameters and the
 * fields each search method requires are checked locally; bad input never reaches the server.
 */
export class CompanyClient {
  readonly #transport: Transport;
  readonly #baseUrl: string;

  /** `realtimeUrl` defaults to the transport's. */
  constructor(transport: Transport, options: { realtimeUrl?: string } = {}) {
    this.#transport = transport;
    this.#baseUrl = options.realtimeUrl ?? transport.realtimeUrl;
  }

  /** Error-tolerant search by name and address (`searchMethod=company`); hits by descending score. */
  async company(body: CompanySearchBody, params: CompanyParams = {}, opts: CallOptions = {}): Promise<CompanySearchResult> {
    return this.#search('company', body, params, opts);
  }

  /** Search by commercial register entry (`searchMethod=tr`). */
  async tr(body: TrSearchBody, params: CompanyParams = {}, opts: CallOptions = {}): Promise<CompanySearchResult> {
    return this.#search('tr', body, params, opts);
  }

  /** Syntax check of a VAT ID (`searchMethod=vat`): `code` is VALID_VAT_ID or INVALID_VAT_ID. */
  async vat(body: VatCheckBody, params: Pick<CompanyParams, 'lang'> = {}, opts: CallOptions = {}): Promise<TransportResponse<VatResult>> {
    return checkVat(this.#transport, this.#baseUrl, body, this.#query('vat', body, params), opts.signal, opts.timeoutMs);
  }

  /**
   * Pages through a `company` or `tr` search with `offset`/`limit`, starting at `params.offset`,
   * until a page comes back shorter than the page size (or `maxPages` pages were read).
   */
  async *pages<M extends 'company' | 'tr'>(
    method: M,
    body: CompanyBodies[M],
    params: Omit<CompanyParams, 'limit'> = {},
    opts: PagingOptions = {},
  ): AsyncGenerator<CompanySearchResult, void, undefined> {
    const { pageSize = 50, maxPages = 20 } = opts;
    let offset = Number(params.offset ?? 0);
    for (let page = 0; page < maxPages; page++) {
      const result = await this.#search(method, body, { ...params, limit: pageSize, offset }, opts);
      yield result;
      if (result.data.companies.length < pageSize) return;
      offset += pageSize;
    }
  }

  /** Every hit of a search, read page by page (see {@link CompanyClient.pages}). */
  async all<M extends 'company' | 'tr'>(
    method: M,
    body: CompanyBodies[M],
    params: Omit<CompanyParams, 'limit'> = {},
    opts: PagingOptions = {},
  ): Promise<CompanyRecord[]> {
    const out: CompanyRecord[] = [];
    for await (const page of this.pages(method, body, params, opts)) out.push(...page.data.companies);
    return out;
  }

  async #search(method: 'company' | 'tr', body: unknown, params: CompanyParams, opts: CallOptions): Promise<CompanySearchResult> {
    const res = await searchCompanies(this.#transport, this.#baseUrl, body as object, this.#query(method, body, params), opts.signal, opts.timeoutMs);
    return { ...res, totalCount: totalCount(res.headers) ?? res.data.companies.length };
  }

  /** The checked query of a `method` call; refuses bad parameters or body fields before sending. */
  #query(method: keyof CompanyBodies, body: unknown, params: CompanyParams): CompanyQuery {
    const parsed = CompanyQuerySchema.safeParse({ ...params, searchMethod: method });
    const violations = [...(parsed.success ? [] : violationsFromZod(parsed.error)), ...validateCompanyBody(method, body)];
    refuseInvalid(`Company ${method} request`, violations);
    return parsed.success ? parsed.data : {};
  }
}
