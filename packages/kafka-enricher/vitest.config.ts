import { defineProject, mergeConfig } from 'vitest/config';
import base, { twoFilesAtOnce } from '../../vitest.config.base.ts';

export default mergeConfig(base, defineProject({ test: { name: '@dq/kafka-enricher', ...twoFilesAtOnce } }));
