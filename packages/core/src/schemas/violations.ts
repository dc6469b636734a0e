import { z } from 'zod';
import type { Violation } from '../errors/index.js';

/**
 * One refused field, the same shape as an entry of the platform's 400 `violations` (contract 7.1):
 * `fieldName` is a request field (dotted for nested ones, e.g. `_options.include.0`) or a pseudo
 * name such as `localityIdentificationSet`.
 */
export const ViolationSchema = z.looseObject({
  fieldName: z.string(),
  message: z.string(),
});
/** One refused field (see {@link ViolationSchema}); the one type shared with the errors module. */
export type { Violation };

/** Outcome of building a path or parsing a value locally: the value, or why it was refused. */
export type Checked<T> = { ok: true; value: T } | { ok: false; violations: Violation[] };

/** Dotted field name of a zod issue path, prefixed when the object sits inside another one. */
function fieldNameOf(path: readonly PropertyKey[], prefix: string): string {
  const parts = path.map((p) => String(p));
  return [prefix, ...parts].filter((p) => p !== '').join('.');
}

/**
 * Converts zod issues to violations, one per offending field. An unknown key of a strict object
 * becomes one violation per key, named after that key, so the caller sees which field to remove.
 */
export function violationsFromZod(error: z.ZodError, prefix = ''): Violation[] {
  const out: Violation[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        out.push({
          fieldName: fieldNameOf([...issue.path, key], prefix),
          message: `${key} is not a field of this request; remove it or check its spelling`,
        });
      }
      continue;
    }
    out.push({ fieldName: fieldNameOf(issue.path, prefix) || '(body)', message: issue.message });
  }
  return out;
}

/** Parses `input` with `schema`; violations instead of a thrown error. */
export function checkWith<S extends z.ZodType>(schema: S, input: unknown): Checked<z.output<S>> {
  const parsed = schema.safeParse(input);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, violations: violationsFromZod(parsed.error) };
}

/** A string that carries something: not empty, not only blanks. */
export function hasText(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/** A short, printable rendering of a refused value for a violation message (never secrets). */
export function shown(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
