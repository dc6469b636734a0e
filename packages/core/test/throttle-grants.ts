import type { PgThrottle } from '@dq/core/throttle-pg';

/** Keeps `callers` acquiring batch slots from `t` until `until` (Date.now), noting when each was granted. */
export async function saturate(t: PgThrottle, until: number, times: number[], callers = 8): Promise<void> {
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (Date.now() < until) {
        const ticket = await t.acquire('batch');
        times.push(Date.now());
        t.ended?.('batch', ticket as number);
      }
    }),
  );
}

/** Most grants in any one second. */
export function busiestSecond(times: number[]): number {
  const all = [...times].sort((x, y) => x - y);
  let most = 0;
  for (let i = 0, j = 0; i < all.length; i++) {
    while (all[i]! - all[j]! >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}
