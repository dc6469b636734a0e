import { z } from 'zod';
import { BooleanParamSchema, intParam, oneOf } from './fields.js';
import { hasText, violationsFromZod, type Violation } from './violations.js';

/** Company search methods (contract 4.7). */
export const COMPANY_SEARCH_METHODS = ['company', 'tr', 'vat'] as const;
export type CompanySearchMethod = (typeof COMPANY_SEARCH_METHODS)[number];

/** Languages of company messages (contract 4.7). */
export const COMPANY_LANGUAGES = ['de', 'en', 'fr'] as const;

/** The platform's defaults for omitted query parameters (contract 4.7). */
export const COMPANY_QUERY_DEFAULTS = {
  searchMethod: 'company',
  minScore: 85,
  includeDeleted: false,
  limit: 50,
  offset: 0,
  lang: 'en',
} as const;

/**
 * Query parameters of POST /companies/v2 (contract 4.7), all optional. Numbers and booleans may
 * arrive as strings (`"51"`, `"true"`), as they do from a URL or a CSV cell.
 */
export const CompanyQuerySchema = z.strictObject({
  searchMethod: oneOf(COMPANY_SEARCH_METHODS).optional(),
  minScore: intParam(1, 100).optional(),
  includeDeleted: BooleanParamSchema.optional(),
  limit: intParam(1, 50).optional(),
  offset: intParam(0).optional(),
  lang: oneOf(COMPANY_LANGUAGES).optional(),
});
export type CompanyQuery = z.infer<typeof CompanyQuerySchema>;

const idLike = z.union([z.string(), z.number()]);

/** Body of a `company` search: name mandatory, address optional (contract 4.7). */
export const CompanySearchBodySchema = z.strictObject({
  company: z.string().refine(hasText, { error: 'company name is mandatory' }),
  zip: idLike.optional(),
  city: z.string().optional(),
  street: z.string().optional(),
});
/** Body of a `tr` search: court, register type and number, all mandatory (contract 4.7). */
export const TrSearchBodySchema = z.strictObject({
  trCourt: z.string().refine(hasText, { error: 'trCourt is mandatory' }),
  trType: z.string().refine(hasText, { error: 'trType is mandatory (e.g. HRB, HRA)' }),
  trNo: idLike.refine((v) => String(v).trim() !== '', { error: 'trNo is mandatory' }),
});
/** Body of a `vat` check: the VAT ID, mandatory (contract 4.7). */
export const VatCheckBodySchema = z.strictObject({
  vatId: z.string().refine(hasText, { error: 'vatId is mandatory' }),
});
export type CompanySearchBody = z.infer<typeof CompanySearchBodySchema>;
export type TrSearchBody = z.infer<typeof TrSearchBodySchema>;
export type VatCheckBody = z.infer<typeof VatCheckBodySchema>;

/** The body schema of each search method. */
export const COMPANY_BODY_SCHEMAS = {
  company: CompanySearchBodySchema,
  tr: TrSearchBodySchema,
  vat: VatCheckBodySchema,
} as const;
/** The body type of each search method. */
export interface CompanyBodies {
  company: CompanySearchBody;
  tr: TrSearchBody;
  vat: VatCheckBody;
}

/**
 * A hit's postcode. The platform sends it as a JSON number (docs/platform-contract.md), which
 * cannot hold the leading zero of a German postcode (Leipzig is 04103, not 4103): a whole number
 * below 100000 is given as the five digits the register holds. A string is taken as it is.
 */
const hitPostcode = idLike.transform((v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 100_000 ? String(v).padStart(5, '0') : String(v)));

/** One company hit (contract 2.3). Numbers in samples may come as strings; both are accepted. */
export const CompanyRecordSchema = z.looseObject({
  id: idLike,
  company: z.string(),
  zip: hitPostcode.optional(),
  city: z.string().optional(),
  street: z.string().optional(),
  trCourt: z.string().optional(),
  trType: z.string().optional(),
  trNo: idLike.optional(),
  trStatus: z.enum(['active', 'inactive']).optional(),
  searchMethod: oneOf(COMPANY_SEARCH_METHODS).optional(),
  searchScore: z.number().min(0).max(100),
});
export type CompanyRecord = z.infer<typeof CompanyRecordSchema>;

/** 200 body of a company or tr search (contract 2.4). */
export const CompanySuccessSchema = z.looseObject({
  status: z.number().int(),
  companies: z.array(CompanyRecordSchema),
});
export type CompanySuccess = z.infer<typeof CompanySuccessSchema>;

/**
 * 200 body of a `company` or `tr` search as read by the one company call (`clients/calls.ts`):
 * the contract shows it "with at least one hit"; an answer without `companies` is read as none.
 */
export const CompanySearchAnswerSchema = z
  .looseObject({ status: z.number().int(), companies: z.array(CompanyRecordSchema).optional() })
  .transform((v) => (v.companies === undefined ? { ...v, companies: [] } : (v as typeof v & { companies: CompanyRecord[] })));
export type CompanySearchAnswer = z.output<typeof CompanySearchAnswerSchema>;

/** 200 body of a vat check (contract 2.4): syntax only, not ownership. */
export const VatResultSchema = z.looseObject({
  status: z.number().int(),
  code: z.enum(['VALID_VAT_ID', 'INVALID_VAT_ID']),
});
export type VatResult = z.infer<typeof VatResultSchema>;

/** Error body of the company service (contract 2.4); `timestamp` is ISO text or epoch ms. */
export const CompanyErrorBodySchema = z.looseObject({
  timestamp: z.union([z.string(), z.number()]),
  status: z.number().int(),
  error: z.string(),
  message: z.string(),
  path: z.string(),
});
export type CompanyErrorBody = z.infer<typeof CompanyErrorBodySchema>;

/** Checks company query parameters locally; an empty list means they may be sent. */
export function validateCompanyQuery(query: unknown): Violation[] {
  const parsed = CompanyQuerySchema.safeParse(query ?? {});
  return parsed.success ? [] : violationsFromZod(parsed.error);
}

/** Checks a company body against the fields its search method requires (contract 4.7). */
export function validateCompanyBody(method: CompanySearchMethod, body: unknown): Violation[] {
  const schema = COMPANY_BODY_SCHEMAS[method] as z.ZodType | undefined;
  if (!schema) {
    return [{ fieldName: 'searchMethod', message: `must be one of ${COMPANY_SEARCH_METHODS.join(', ')}` }];
  }
  const parsed = schema.safeParse(body);
  return parsed.success ? [] : violationsFromZod(parsed.error);
}
