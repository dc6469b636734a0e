import { z } from 'zod';
import { CountryCodeSchema, oneOf } from './fields.js';
import { hasText, violationsFromZod, type Violation } from './violations.js';

/** `_options.include` values: contract 2.1 plus the ones docs/platform-contract.md lists from the vendor docs. */
export const ADDRESS_INCLUDE_VALUES = [
  'coordinates-wgs84',
  'metadata',
  'country-info',
  'region-info',
  'municipality-info',
  'delivery-info',
  'address-info',
] as const;
export type AddressInclude = (typeof ADDRESS_INCLUDE_VALUES)[number];

import { RESULT_CLASSES } from './vocabularies.js';

export { RESULT_CLASSES };
export const ResultClassSchema = oneOf(RESULT_CLASSES);

/** Known `coordinates.wgs84.precision` values (docs/platform-contract.md); others are accepted from the platform. */
export const COORDINATE_PRECISIONS = ['locality', 'street', 'house-number-range', 'house-number'] as const;
/** Known `addressType` values (docs/platform-contract.md); others are accepted from the platform. */
export const ADDRESS_TYPES = ['delivery', 'po-box', 'major-customer'] as const;

/**
 * The fields of an address validation request (contract 2.1) without the cross-field rule. Strict:
 * an unknown field (a typo such as `postcode`) is refused locally rather than ignored by a paid call.
 */
export const AddressFieldsSchema = z.strictObject({
  street: z.string().optional(),
  houseNumber: z.string().optional(),
  addressLine: z.string().optional(),
  postalCode: z.string().optional(),
  locality: z.string().optional(),
  localityLine: z.string().optional(),
  country: CountryCodeSchema.optional(),
  _options: z.strictObject({ include: z.array(oneOf(ADDRESS_INCLUDE_VALUES)).optional() }).optional(),
});

/** Violation of rule 2.1.1, or none: `localityLine`, or both `postalCode` and `locality`. */
export function localityIdentificationViolation(input: unknown): Violation | undefined {
  const o = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  if (hasText(o['localityLine']) || (hasText(o['postalCode']) && hasText(o['locality']))) return undefined;
  return {
    fieldName: 'localityIdentificationSet',
    message: 'set localityLine, or both postalCode and locality',
  };
}

function withLocalityRule<T extends z.ZodType>(schema: T) {
  return schema.superRefine((value, ctx) => {
    const v = localityIdentificationViolation(value);
    if (v) ctx.addIssue({ code: 'custom', path: [v.fieldName], message: v.message });
  });
}

/** Address validation request (contract 2.1), body of POST /location/v1/validate. */
export const AddressRequestSchema = withLocalityRule(AddressFieldsSchema);
export type AddressRequest = z.infer<typeof AddressFieldsSchema>;

/** Batch validation request: one address plus the client's `customerAddressId` (docs/platform-contract.md). */
const BatchFieldsSchema = AddressFieldsSchema.extend({ customerAddressId: z.string().min(1) });
export const BatchRequestSchema = withLocalityRule(BatchFieldsSchema);
export type BatchRequest = AddressRequest & { customerAddressId: string };

/** A `houseNumberChoice` range of a class E candidate (contract 2.2). */
export const HouseNumberRangeSchema = z.looseObject({
  from: z.string(),
  to: z.string(),
  step: z.enum(['even', 'odd']),
});
export type HouseNumberRange = z.infer<typeof HouseNumberRangeSchema>;

/** `coordinates` of a candidate when `coordinates-wgs84` was requested (contract 2.2). */
export const CoordinatesSchema = z.looseObject({
  wgs84: z.looseObject({
    precision: z.string(),
    lat: z.number().min(-90).max(90),
    lon: z.number().min(-180).max(180),
  }),
});

/** `_meta` of a candidate when `metadata` was requested (shape from docs/platform-contract.md). */
export const CandidateMetaSchema = z.looseObject({
  fields: z.record(z.string(), z.looseObject({ relevance: z.string().optional(), status: z.string().optional() })).optional(),
});

/** One candidate address of a result (contract 2.2). Extra fields from the platform are kept. */
export const CandidateSchema = z.looseObject({
  addressType: z.string().optional(),
  country: z.string().optional(),
  postalCode: z.string().optional(),
  locality: z.string().optional(),
  localityAbbreviation: z.string().optional(),
  subLocality: z.string().optional(),
  street: z.string().optional(),
  streetAbbreviation: z.string().optional(),
  houseNumber: z.string().optional(),
  houseNumberChoice: z.array(HouseNumberRangeSchema).optional(),
  coordinates: CoordinatesSchema.optional(),
  _meta: CandidateMetaSchema.optional(),
});
export type Candidate = z.infer<typeof CandidateSchema>;
/** Alias of {@link Candidate}. */
export type AddressCandidate = Candidate;

/** 200 body of validate (contract 2.2). */
export const AddressResultSchema = z.looseObject({
  resultClass: ResultClassSchema,
  results: z.array(CandidateSchema),
});
export type AddressResult = z.infer<typeof AddressResultSchema>;

/** 200 body of batch/sync: the result plus the echoed `customerAddressId` (docs/platform-contract.md). */
export const BatchResultSchema = AddressResultSchema.extend({ customerAddressId: z.string() });
export type BatchResult = z.infer<typeof BatchResultSchema>;

/** Body of POST /location/v1/start-session (docs/platform-contract.md). */
export const StartSessionRequestSchema = z.strictObject({ country: CountryCodeSchema });
export type StartSessionRequest = z.infer<typeof StartSessionRequestSchema>;

/** 200 body of start-session: an opaque token, to be used verbatim (contract 5.4). */
export const StartSessionResponseSchema = z.looseObject({ _sessionToken: z.string().min(1) });
export type StartSessionResponse = z.infer<typeof StartSessionResponseSchema>;

/**
 * Autocomplete request — the project's own choice of shape (docs/platform-contract.md): `country` (equal to the
 * session's country) and free text `query` and/or structured fields; at least one must carry text.
 */
export const AutocompleteRequestSchema = z
  .strictObject({
    country: CountryCodeSchema,
    query: z.string().optional(),
    postalCode: z.string().optional(),
    locality: z.string().optional(),
    street: z.string().optional(),
    houseNumber: z.string().optional(),
  })
  .superRefine((v, ctx) => {
    const { country: _country, ...rest } = v;
    if (!Object.values(rest).some(hasText)) {
      ctx.addIssue({ code: 'custom', path: ['query'], message: 'set query or at least one address field' });
    }
  });
export type AutocompleteRequest = z.infer<typeof AutocompleteRequestSchema>;

/** 200 body of autocomplete: candidates of the validation shape (docs/platform-contract.md). */
export const AutocompleteResponseSchema = z.looseObject({ results: z.array(CandidateSchema) });
export type AutocompleteResponse = z.infer<typeof AutocompleteResponseSchema>;

/**
 * Checks an address validation request locally (contract 2.1) and returns every violation at once;
 * an empty list means it may be sent. With `batch`, `customerAddressId` is required as well.
 */
export function validateAddressRequest(input: unknown, opts: { batch?: boolean } = {}): Violation[] {
  const schema = opts.batch ? BatchFieldsSchema : AddressFieldsSchema;
  const parsed = schema.safeParse(input);
  const out = parsed.success ? [] : violationsFromZod(parsed.error);
  const locality = localityIdentificationViolation(input);
  if (locality) out.push(locality);
  return out;
}
