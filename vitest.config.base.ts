import { defineConfig } from 'vitest/config';

/** Shared test settings; each project merges these into its own config. */
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
    retry: 0,
  },
});
