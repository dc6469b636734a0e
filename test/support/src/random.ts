import { mulberry32 } from '@dq/sandbox';

/** The sandbox's seeded generator (mulberry32), for tests that draw random cases: same seed, same cases. */
export { mulberry32 };

/** Seeded draws: a float in [0, 1) when called, and the usual helpers on top. */
export interface Rand {
  (): number;
  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** A shuffled copy of `items`. */
  shuffle<T>(items: readonly T[]): T[];
}

/** Seeded draws from {@link mulberry32}: a failing case replays from its seed. */
export function seededRandom(seed: number): Rand {
  const next = mulberry32(seed);
  const r = (() => next()) as Rand;
  r.int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  r.pick = (items) => items[Math.floor(next() * items.length)]!;
  r.chance = (p) => next() < p;
  r.shuffle = (items) => {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = r.int(0, i);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  };
  return r;
}
