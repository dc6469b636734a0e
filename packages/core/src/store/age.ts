/** Units of an age: seconds (no unit), `s`, `m`, `h`, `d`. */
const UNIT_MS: Record<string, number> = { '': 1000, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The default `--max-age`: answers are reused for 30 days. */
export const DEFAULT_MAX_AGE_MS = 30 * UNIT_MS['d']!;

/**
 * The longest age taken: 100 years. Beyond it the cut-off (now minus the age) lies before the
 * years a date can hold everywhere (a Postgres store compares it with timestamps, and a date past
 * year -271821 is no date at all), and an answer older than a century is no answer to keep.
 */
export const MAX_AGE_MS = 36_500 * UNIT_MS['d']!;

/**
 * Milliseconds of an age such as `30d`, `12h`, `90m`, `45s` or `3600` (seconds), at most
 * {@link MAX_AGE_MS}; undefined when `text` is not one (the caller names the flag in its error).
 */
export function parseAge(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/i.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2]!.toLowerCase()]!;
  return Number.isFinite(ms) && ms <= MAX_AGE_MS ? Math.round(ms) : undefined;
}

/** A short text for an age in milliseconds, e.g. `30d`, `12h`, `90s`. */
export function formatAge(ms: number): string {
  for (const [unit, size] of [
    ['d', UNIT_MS['d']!],
    ['h', UNIT_MS['h']!],
    ['m', UNIT_MS['m']!],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}
