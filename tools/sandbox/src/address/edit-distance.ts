/** Reused rows: the distance runs millions of times per benchmark and must not allocate. */
let scratch: [Int32Array, Int32Array, Int32Array] = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/**
 * Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), bounded: returns
 * `max + 1` as soon as the distance is known to exceed `max`. Strings are the ASCII keys of
 * {@link normaliseKey}, so code units are characters.
 */
export function boundedEditDistance(a: string, b: string, max: number): number {
  const la = a.length;
  const lb = b.length;
  if (Math.abs(la - lb) > max) return max + 1;
  if (la === 0 || lb === 0) return Math.max(la, lb);
  if (scratch[0].length <= lb) scratch = [new Int32Array(lb * 2 + 2), new Int32Array(lb * 2 + 2), new Int32Array(lb * 2 + 2)];
  let [prevPrev, prev, row] = scratch;
  for (let j = 0; j <= lb; j++) prev[j] = j;
  for (let i = 1; i <= la; i++) {
    row[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= lb; j++) {
      const cb = b.charCodeAt(j - 1);
      const cost = ca === cb ? 0 : 1;
      let value = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && ca === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === cb) {
        value = Math.min(value, prevPrev[j - 2]! + 1);
      }
      row[j] = value;
      if (value < rowMin) rowMin = value;
    }
    if (rowMin > max) return max + 1;
    [prevPrev, prev, row] = [prev, row, prevPrev];
  }
  const distance = prev[lb]!;
  return distance > max ? max + 1 : distance;
}

/**
 * The largest edit distance at which a name still counts as the same name misspelt: none for
 * keys under 4 characters, one up to 6, two from 7 on.
 */
export function typoTolerance(key: string): number {
  if (key.length < 4) return 0;
  return key.length < 7 ? 1 : 2;
}
