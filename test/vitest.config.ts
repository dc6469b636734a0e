import { configDefaults, defineConfig, mergeConfig } from 'vitest/config';
import base, { twoFilesAtOnce } from '../vitest.config.base.ts';

/**
 * Files that measure a rate or a pacing (the shared budget keeping to 100/s, the throttle's
 * slots): run after the others, one at a time. The others run two at once.
 */
const timed = [
  'shared-budget.test.ts',
  'budget-attempt-ends.test.ts',
  'throttle-pg.test.ts',
  'rate-limits.test.ts',
  'local-budget-late-arrival.test.ts',
  'sessions.test.ts',
];

export default mergeConfig(
  base,
  defineConfig({
    test: {
      projects: [
        {
          extends: true,
          test: {
            name: '@dq/integration-tests',
            include: ['**/*.test.ts'],
            exclude: [...configDefaults.exclude, ...timed],
            ...twoFilesAtOnce,
            sequence: { groupOrder: 0 },
          },
        },
        // Not `extends`: that would add the shared include pattern to this one.
        { test: { ...base.test, name: '@dq/integration-tests (timed)', include: timed, sequence: { groupOrder: 1 } } },
      ],
    },
  }),
);
