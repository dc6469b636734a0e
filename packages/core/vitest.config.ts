import { mergeConfig } from 'vitest/config';
import base, { twoAtOnceThenTimed } from '../../vitest.config.base.ts';

/**
 * Files that measure a rate, a pacing or a delay against a bound of a few hundred milliseconds or
 * less: run after the others, one at a time. The others (servers that answer late, child
 * processes, stores) run two at once.
 */
const timed = [
  'test/throttle.test.ts',
  'test/retry.test.ts',
  'test/run-report-rate.test.ts',
  'test/transport-budget.test.ts',
  'test/transport-exchange.test.ts',
  'test/engine-budget.test.ts',
  'test/download-budget.test.ts',
];

export default mergeConfig(base, twoAtOnceThenTimed('@dq/core', timed));
