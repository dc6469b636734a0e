import { z } from 'zod';
import { ViolationSchema } from './violations.js';

/**
 * An address-API error body, `application/problem+json` (RFC 7807, contract 7.1). `type` is
 * `{docs_url}/location/problems#<fragment>`; `violations` comes with 400 field errors.
 */
export const ProblemSchema = z.looseObject({
  status: z.number().int(),
  type: z.string(),
  title: z.string(),
  detail: z.string().optional(),
  violations: z.array(ViolationSchema).optional(),
});
export type ProblemBody = z.infer<typeof ProblemSchema>;
