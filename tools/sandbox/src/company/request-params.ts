import type { CompanySearchInput } from './company-search.js';
import { BadRequestError, echo, LANGUAGES, type ExpectedValue, type Language } from './messages.js';
import { REGISTER_TYPES, type RegisterLookupInput } from './register-lookup.js';
import type { SearchMethod } from './types.js';

/** Query parameters of `/companies/v2` with the contract's defaults filled in (4.7). */
export interface CompanyQuery {
  readonly searchMethod: SearchMethod;
  /** 1–100, default 85. */
  readonly minScore: number;
  /** Default false. */
  readonly includeDeleted: boolean;
  /** 1–50, default 50. */
  readonly limit: number;
  /** ≥ 0, default 0. */
  readonly offset: number;
  readonly lang: Language;
}

const SEARCH_METHODS: readonly SearchMethod[] = ['company', 'tr', 'vat'];

/** The single value of `name`, or undefined; a repeated parameter is ambiguous, so a 400. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw new BadRequestError('PARAM_REPEATED', { name });
  return values[0];
}

function oneOf<T extends string>(query: URLSearchParams, name: string, allowed: readonly T[], fallback: T): T {
  const raw = single(query, name);
  if (raw === undefined) return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new BadRequestError('PARAM_NOT_ONE_OF', { name, allowed: allowed.join(', '), value: echo(raw) });
}

/** The digits of a whole number, or NaN; no sign, exponent, fraction or spaces. */
function wholeNumber(raw: string): number {
  return /^[0-9]{1,15}$/.test(raw) ? Number(raw) : Number.NaN;
}

function integer(query: URLSearchParams, name: string, min: number, max: number, fallback: number): number {
  const raw = single(query, name);
  if (raw === undefined) return fallback;
  const value = wholeNumber(raw);
  if (value >= min && value <= max) return value;
  throw new BadRequestError('PARAM_NOT_INTEGER_IN_RANGE', { name, min: String(min), max: String(max), value: echo(raw) });
}

function nonNegativeInteger(query: URLSearchParams, name: string, fallback: number): number {
  const raw = single(query, name);
  if (raw === undefined) return fallback;
  const value = wholeNumber(raw);
  if (Number.isSafeInteger(value)) return value;
  throw new BadRequestError('PARAM_NOT_NON_NEGATIVE_INTEGER', { name, value: echo(raw) });
}

/** The message language alone, read first so every other 400 can be worded in it. */
export function parseLang(query: URLSearchParams): Language {
  return oneOf(query, 'lang', LANGUAGES, 'en');
}

/** All query parameters, checked against contract 4.7's ranges; throws {@link BadRequestError}. */
export function parseQuery(query: URLSearchParams): CompanyQuery {
  return {
    lang: parseLang(query),
    searchMethod: oneOf(query, 'searchMethod', SEARCH_METHODS, 'company'),
    minScore: integer(query, 'minScore', 1, 100, 85),
    includeDeleted: oneOf(query, 'includeDeleted', ['true', 'false'], 'false') === 'true',
    limit: integer(query, 'limit', 1, 50, 50),
    offset: nonNegativeInteger(query, 'offset', 0),
  };
}

type Body = Readonly<Record<string, unknown>>;

/** The body as an object, or a 400 naming the search method whose fields were expected. */
export function bodyObject(body: unknown, method: SearchMethod): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestError('BODY_NOT_OBJECT', { method });
  }
  return body as Body;
}

function wrongType(field: string, expected: ExpectedValue): BadRequestError {
  return new BadRequestError('FIELD_WRONG_TYPE', { field, expected });
}

function requiredString(body: Body, field: string, method: SearchMethod): string {
  const value = body[field];
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    throw new BadRequestError('FIELD_MISSING', { field, method });
  }
  if (typeof value !== 'string') throw wrongType(field, 'string');
  return value;
}

/** An optional field: absent is fine, but null or blank is an empty value (contract 7.2). */
function optional(body: Body, field: string): unknown {
  const value = body[field];
  if (value === null || (typeof value === 'string' && value.trim() === '')) {
    throw new BadRequestError('FIELD_EMPTY', { field });
  }
  return value;
}

function optionalString(body: Body, field: string): string | undefined {
  const value = optional(body, field);
  if (value !== undefined && typeof value !== 'string') throw wrongType(field, 'string');
  return value;
}

function optionalZip(body: Body): number | undefined {
  const value = optional(body, 'zip');
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 99_999) return value;
  // Postcodes are numbers in the register (2.3), so "04103" and 4103 are the same postcode.
  if (typeof value === 'string' && /^\s*[0-9]{1,5}\s*$/.test(value)) return Number(value.trim());
  throw wrongType('zip', 'zip');
}

/** Input of searchMethod `company`: `company` mandatory; zip, city, street optional. */
export function parseCompanyInput(body: Body): CompanySearchInput {
  const company = requiredString(body, 'company', 'company');
  const zip = optionalZip(body);
  const city = optionalString(body, 'city');
  const street = optionalString(body, 'street');
  return {
    company,
    ...(zip !== undefined && { zip }),
    ...(city !== undefined && { city }),
    ...(street !== undefined && { street }),
  };
}

/** Input of searchMethod `tr`: trCourt, trType and trNo, all mandatory. */
export function parseRegisterInput(body: Body): RegisterLookupInput {
  const trCourt = requiredString(body, 'trCourt', 'tr');
  const rawType = requiredString(body, 'trType', 'tr');
  const trType = rawType.trim().toUpperCase();
  if (!(REGISTER_TYPES as readonly string[]).includes(trType)) {
    throw new BadRequestError('FIELD_NOT_ONE_OF', {
      field: 'trType',
      allowed: 'HRA, HRB, GnR, PR, VR, GsR',
      value: echo(rawType),
    });
  }
  const rawNo = body.trNo;
  if (rawNo === undefined || rawNo === null || rawNo === '') {
    throw new BadRequestError('FIELD_MISSING', { field: 'trNo', method: 'tr' });
  }
  const trNo = typeof rawNo === 'string' && /^\s*[0-9]{1,9}\s*$/.test(rawNo) ? Number(rawNo.trim()) : rawNo;
  if (typeof trNo !== 'number' || !Number.isSafeInteger(trNo) || trNo < 1) throw wrongType('trNo', 'trNo');
  return { trCourt, trType, trNo };
}

/** Input of searchMethod `vat`: vatId mandatory. */
export function parseVatInput(body: Body): string {
  return requiredString(body, 'vatId', 'vat');
}
