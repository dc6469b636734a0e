import { mergeConfig } from 'vitest/config';
import base, { atOnceThenTimed } from '../vitest.config.base.ts';

/**
 * Files that measure a rate or a pacing (the shared budget keeping to 100/s, the throttle's
 * slots): run after the others, one at a time. The others run three at once (measured: the
 * project in 272 s against 305 s two at once, every test passing).
 */
const timed = [
  'shared-budget.test.ts',
  'budget-attempt-ends.test.ts',
  'throttle-pg.test.ts',
  'rate-limits.test.ts',
  'local-budget-late-arrival.test.ts',
  'sessions.test.ts',
];

export default mergeConfig(base, atOnceThenTimed('@dq/integration-tests', timed, { include: ['**/*.test.ts'], atOnce: 3 }));
