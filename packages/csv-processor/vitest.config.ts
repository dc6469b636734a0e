import { mergeConfig } from 'vitest/config';
import base, { atOnceThenTimed } from '../../vitest.config.base.ts';

/**
 * Files run after the other files, alone: the rate comparison with a reference run, and the
 * 250,000-row memory test, which keeps a core busy for a minute and measures the peak memory of its
 * runs (beside it on two cores, a frozen store in store-failure.test.ts took 204 s to be noticed,
 * 3 times of 3; beside the other files, 40-70 s, within the 150 s the test allows).
 */
const timed = ['test/rate-limit.test.ts', 'test/memory.test.ts'];
/** Removes the locks runs killed by the tests leave (added to the shared setup files). */
const staleLocks = new URL('./test/stale-locks.ts', import.meta.url).pathname;

// The other files run three at once (measured: the project in 275 and 298 s against 356-367 s two
// at once, every test passing; store-failure.test.ts's frozen budget stopped in 81-83 s of its 150).
export default mergeConfig(base, atOnceThenTimed('@dq/csv-processor', timed, { setupFiles: [staleLocks], atOnce: 3 }));
