/** Units of an age: `s`, `m`, `h`, `d` (a number without a unit is taken only when it is 0). */
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The default `--max-age`: answers are reused for 30 days. */
export const DEFAULT_MAX_AGE_MS = 30 * UNIT_MS['d']!;

/**
 * The longest age taken: 100 years. Beyond it the cut-off (now minus the age) lies before the
 * years a date can hold everywhere (a Postgres store compares it with timestamps, and a date past
 * year -271821 is no date at all), and an answer older than a century is no answer to keep.
 */
export const MAX_AGE_MS = 36_500 * UNIT_MS['d']!;

/**
 * Milliseconds of an age such as `30d`, `12h`, `90m` or `45s`, at most {@link MAX_AGE_MS}, or `0`;
 * undefined when `text` is not one ({@link ageProblem} says why, for the caller's error).
 *
 * A number without a unit is refused unless it is 0: `--older-than 30` meant as days would remove
 * every answer older than 30 seconds, and `--max-age 30` would buy nearly every answer again.
 */
export function parseAge(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/i.exec(text);
  if (!match) return undefined;
  const n = Number(match[1]);
  if (match[2] === '') return n === 0 ? 0 : undefined;
  const ms = n * UNIT_MS[match[2]!.toLowerCase()]!;
  return Number.isFinite(ms) && ms <= MAX_AGE_MS ? Math.round(ms) : undefined;
}

/**
 * Why `text` is not an age {@link parseAge} takes, for an error that names the flag before it:
 * a number without a unit gets the units to choose from, anything else the accepted forms.
 */
export function ageProblem(text: string): string {
  const bare = /^\s*(\d+(?:\.\d+)?)\s*$/.exec(text);
  if (bare) return `"${text}" has no unit: write ${bare[1]}d for days, or ${bare[1]}h, ${bare[1]}m or ${bare[1]}s`;
  return `"${text}" is not an age: use e.g. 30d, 12h, 90m or 45s, at most 36500d`;
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
