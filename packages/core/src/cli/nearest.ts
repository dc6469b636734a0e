/**
 * The "did you mean" of every CLI: the known names (flags, environment variables, topics) nearest
 * to one a user mistyped.
 */

/** Levenshtein distance of `a` and `b`, or `max + 1` once it is known to exceed `max`. */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    if (Math.min(...row) > max) return max + 1;
    previous = row;
  }
  return previous[b.length]!;
}

export interface NearestOptions {
  /** Most edits a name may be from the one given (default 2). */
  maxEdits?: number;
  /**
   * Whether one name being the start of the other (both of at least 3 characters, as
   * `--out` for `--output`) counts as one edit (default true).
   */
  prefixes?: boolean;
}

/**
 * The names of `known` at most `maxEdits` edits from `name`, nearest first; names equally near
 * keep their order in `known`, so a caller orders `known` by its preference among ties.
 */
export function nearestNames(name: string, known: Iterable<string>, options: NearestOptions = {}): string[] {
  const maxEdits = options.maxEdits ?? 2;
  const prefixes = options.prefixes ?? true;
  const near: Array<{ candidate: string; distance: number }> = [];
  for (const candidate of known) {
    const prefix = prefixes && name.length >= 3 && candidate.length >= 3 && (candidate.startsWith(name) || name.startsWith(candidate));
    const distance = prefix ? 1 : editDistance(name, candidate, maxEdits);
    if (distance <= maxEdits) near.push({ candidate, distance });
  }
  // Array.prototype.sort is stable: ties keep the order of `known`.
  return near.sort((a, b) => a.distance - b.distance).map(({ candidate }) => candidate);
}
