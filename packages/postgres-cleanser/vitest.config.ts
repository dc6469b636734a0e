import { defineProject, mergeConfig } from 'vitest/config';
import base, { filesAtOnce } from '../../vitest.config.base.ts';

// Three files at once: its tests wait on PostgreSQL, lock and connect timeouts and child processes
// more than they compute (measured: two at once kept 1.65 of the 2 cores busy, 290-326 s in CI;
// three at once 200-260 s alone, every test passing).
export default mergeConfig(base, defineProject({ test: { name: '@dq/postgres-cleanser', ...filesAtOnce(3) } }));
