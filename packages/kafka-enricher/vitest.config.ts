import { defineProject, mergeConfig } from 'vitest/config';
import base, { filesAtOnce } from '../../vitest.config.base.ts';

// Four files at once: its tests spend their time waiting on brokers (group joins, session timeouts,
// drains) and use about half a core on average one at a time (measured: 377 s wall, 209 s CPU for
// the whole suite two at once; four at once 206 s wall).
export default mergeConfig(base, defineProject({ test: { name: '@dq/kafka-enricher', ...filesAtOnce(4) } }));
