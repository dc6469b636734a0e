import { configDefaults, defineConfig, mergeConfig } from 'vitest/config';
import base, { twoFilesAtOnce } from '../../vitest.config.base.ts';

/**
 * Files that time what they test, run after the other files, alone: the rate comparison with a
 * reference run, and the store failures (a frozen store must end the run within its timeouts;
 * beside the 250,000-row memory test on two cores the run took 204 s to notice, 3 times of 3).
 */
const timed = ['test/rate-limit.test.ts', 'test/store-failure.test.ts'];
/** Removes the locks runs killed by the tests leave (added to the shared setup files). */
const staleLocks = new URL('./test/stale-locks.ts', import.meta.url).pathname;

export default mergeConfig(
  base,
  defineConfig({
    test: {
      projects: [
        {
          extends: true,
          test: {
            name: '@dq/csv-processor',
            exclude: [...configDefaults.exclude, ...timed],
            ...twoFilesAtOnce,
            sequence: { groupOrder: 0 },
            setupFiles: [staleLocks],
          },
        },
        // Not `extends`: that would add the shared include pattern to this one.
        {
          test: {
            ...base.test,
            name: '@dq/csv-processor (timed)',
            include: timed,
            sequence: { groupOrder: 1 },
            setupFiles: [...(base.test?.setupFiles as string[]), staleLocks],
          },
        },
      ],
    },
  }),
);
