/** Statistics the benchmarks report: medians and the spread of their runs. */

/** The median: the middle value, or the mean of the two middle values of an even count; 0 when empty. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** The value at the middle position after sorting (the upper of the two middle values of an even count); `empty` when there is none. */
export function middle(xs: number[], empty: number): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? empty;
}

/** Smallest and largest value, as measured. */
export function range(xs: number[]): [number, number] {
  return [Math.min(...xs), Math.max(...xs)];
}

/** Smallest and largest value, rounded to whole numbers (rates per second). */
export function spread(xs: number[]): [number, number] {
  return [Math.round(Math.min(...xs)), Math.round(Math.max(...xs))];
}
