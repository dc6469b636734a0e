import { mergeConfig } from 'vitest/config';
import base, { atOnceThenTimed } from '../../vitest.config.base.ts';

/**
 * Files that measure a rate, a pacing or a delay against a bound of a few hundred milliseconds or
 * less: run after the others, one at a time. The others (servers that answer late, child
 * processes, stores) run three at once (measured: 149 s against ~180 s two at once, every test passing).
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

export default mergeConfig(base, atOnceThenTimed('@dq/core', timed, { atOnce: 3 }));
