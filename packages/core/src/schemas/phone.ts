import { z } from 'zod';

/** A parameter descriptor of a describe response (contract 2.5). */
export const PhoneParameterSchema = z.looseObject({
  name: z.string(),
  type: z.string(),
  values: z.record(z.string(), z.string()).optional(),
  length: z.number().int().optional(),
  defaultValue: z.union([z.string(), z.number(), z.null()]).optional(),
  minimumValue: z.number().optional(),
  maximumValue: z.number().optional(),
});
export type PhoneParameter = z.infer<typeof PhoneParameterSchema>;

/** Known descriptor `type` values (contract 2.5); others are accepted from the platform. */
export const PHONE_PARAMETER_TYPES = ['Enum', 'String', 'Numeric'] as const;

/** 200 body of GET /rest/describe/phone_number_analysis/analyse_phone (contract 2.5). */
export const PhoneDescribeSchema = z.looseObject({
  links: z.array(z.looseObject({ rel: z.string(), href: z.string() })),
  content: z.array(z.looseObject({ parameters: z.array(PhoneParameterSchema) })),
});
export type PhoneDescribe = z.infer<typeof PhoneDescribeSchema>;
