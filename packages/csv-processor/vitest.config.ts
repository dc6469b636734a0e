import { defineProject, mergeConfig } from 'vitest/config';
import base from '../../vitest.config.base.ts';

export default mergeConfig(base, defineProject({ test: { name: '@dq/csv-processor' } }));
