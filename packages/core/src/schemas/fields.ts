import { z } from 'zod';
import { isCountryCode } from './countries.js';
import { shown } from './violations.js';

/**
 * A country code as the address API takes it (contract 2.1): two upper-case letters that are an
 * ISO 3166-1 alpha-2 code. `de` is refused with a hint to write `DE`.
 */
export const CountryCodeSchema = z.string().superRefine((value, ctx) => {
  if (!/^[A-Z]{2}$/.test(value)) {
    const hint = /^[a-zA-Z]{2}$/.test(value) ? ` (write ${shown(value.toUpperCase())})` : '';
    ctx.addIssue({
      code: 'custom',
      message: `must be two upper-case letters (ISO 3166-1 alpha-2, e.g. "DE"); got ${shown(value)}${hint}`,
    });
  } else if (!isCountryCode(value)) {
    ctx.addIssue({
      code: 'custom',
      message: `${shown(value)} is not an ISO 3166-1 alpha-2 country code`,
    });
  }
});

/**
 * An integer that may arrive as a decimal string (query parameters, CSV cells, URL search params):
 * `"12"` becomes 12; anything else is left for the number check to refuse.
 */
export function intParam(min: number, max?: number): z.ZodType<number, unknown> {
  const range = max === undefined ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
  let n = z.number({ error: `must be ${range}` }).int({ error: `must be ${range}` });
  n = n.min(min, { error: `must be ${range}` });
  if (max !== undefined) n = n.max(max, { error: `must be ${range}` });
  return z.preprocess((v) => (typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v), n);
}

/** A boolean that may arrive as the string `true` or `false` (query parameters). */
export const BooleanParamSchema: z.ZodType<boolean, unknown> = z.preprocess(
  (v) => (v === 'true' ? true : v === 'false' ? false : v),
  z.boolean({ error: 'must be true or false' }),
);

/** A value from a fixed list; the message lists what is allowed. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `must be one of ${values.join(', ')}` });
}
