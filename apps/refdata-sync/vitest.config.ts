import { defineProject, mergeConfig } from 'vitest/config';
import base, { twoFilesAtOnce } from '../../vitest.config.base.ts';

// Its tests wait on servers that answer late or not at all, and on child processes, far more than
// they compute; their time bounds have seconds of slack.
export default mergeConfig(base, defineProject({ test: { name: '@dq/refdata-sync', ...twoFilesAtOnce } }));
