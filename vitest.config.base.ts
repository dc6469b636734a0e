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
    // The result store's default folder is a fresh temporary one per test, never the home cache.
    setupFiles: [new URL('./test/support/isolated-store.ts', import.meta.url).pathname],
  },
});
