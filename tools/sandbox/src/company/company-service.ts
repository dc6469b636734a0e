import { searchCompanies } from './company-search.js';
import { BadRequestError, echo, formatMessage, type Language } from './messages.js';
import { NameIndex } from './name-index.js';
import { generateRegister } from './register.js';
import { RegisterLookup } from './register-lookup.js';
import { bodyObject, parseCompanyInput, parseLang, parseQuery, parseRegisterInput, parseVatInput } from './request-params.js';
import type { CompanyHit, CompanyResponse, CompanyService, CompanyServiceOptions } from './types.js';
import { checkVatId, compactVatId, VAT_PREFIXES } from './vat/index.js';

/** Contract 4.7 / 8: a search never returns more than this many hits in all. */
const MAX_HITS = 50;

/** The 2.4 error envelope. */
function errorResponse(status: number, error: string, message: string, path: string): CompanyResponse {
  return { status, body: { timestamp: new Date().toISOString(), status, error, message, path } };
}

function badRequest(cause: BadRequestError, lang: Language, path: string): CompanyResponse {
  return errorResponse(400, 'Bad Request', formatMessage(cause.code, lang, cause.params), path);
}

/**
 * Creates the company validation service over a freshly generated register
 * (`seed` default 1, `size` default 5000 companies), with its name and register indexes.
 */
export function createCompanyService(opts: CompanyServiceOptions = {}): CompanyService {
  const { seed = 1, size = 5000 } = opts;
  const companies = generateRegister(seed, size);
  const names = new NameIndex(companies);
  const register = new RegisterLookup(companies);

  function answer(query: URLSearchParams, body: unknown): CompanyResponse {
    const params = parseQuery(query);
    const input = bodyObject(body, params.searchMethod);
    if (params.searchMethod === 'vat') {
      const vatId = parseVatInput(input);
      const code = checkVatId(vatId);
      if (code === 'UNKNOWN_COUNTRY') {
        throw new BadRequestError('VAT_UNKNOWN_COUNTRY', {
          prefix: echo(compactVatId(vatId).slice(0, 2)),
          allowed: VAT_PREFIXES.join(', '),
        });
      }
      // No X-Total-Count: a VAT check returns a code, not a list of results.
      return { status: 200, body: { status: 200, code } };
    }
    const filter = { minScore: params.minScore, includeDeleted: params.includeDeleted };
    const hits: CompanyHit[] =
      params.searchMethod === 'tr' ? register.lookup(parseRegisterInput(input), filter) : searchCompanies(companies, names, parseCompanyInput(input), filter);
    const page = hits.slice(0, MAX_HITS).slice(params.offset, params.offset + params.limit);
    // 2.4 shows the success envelope only for "at least one hit". No hit is still a successful
    // search, so it gets the same envelope with an empty list and X-Total-Count 0 rather than
    // an error status a client would have to tell apart from a bad request.
    return { status: 200, body: { status: 200, companies: page }, totalCount: page.length };
  }

  return {
    companies,
    handle(query, body, path) {
      let lang: Language = 'en';
      try {
        lang = parseLang(query);
        return answer(query, body);
      } catch (error) {
        if (error instanceof BadRequestError) return badRequest(error, lang, path);
        // Contract 7.2: 500 "Unknown server error"; internals stay out of the response.
        return errorResponse(500, 'Internal Server Error', 'Unknown server error.', path);
      }
    },
  };
}
