import { setTimeout as sleep } from 'node:timers/promises';
import type { Running } from '@dq/test-support/kafka';

/** The exit code of `r`, or 'still running after … ms' when it has not ended within `ms`. */
export async function exitWithin(r: Running, ms: number): Promise<number | null | string> {
  return Promise.race([r.exited.then((e) => e.code), sleep(ms).then(() => `still running after ${ms} ms`)]);
}

/** The `dq-kafka: …` lines of `r`'s stderr (its error lines, not the JSON log). */
export function errorLines(r: Running): string[] {
  return r
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('dq-kafka: '));
}
