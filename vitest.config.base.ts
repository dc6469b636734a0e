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

/**
 * Test files run one at a time by default: the tests that measure a rate or a speed must not share
 * two cores with another file. Projects whose tests wait on servers, timeouts and child processes
 * more than they compute, and measure no rate against a reference, run two files at once instead
 * (their CI time is about halved). A file of such a project that does measure one runs after the
 * others, alone (see csv-processor's config).
 */
export const twoFilesAtOnce = { fileParallelism: true, maxWorkers: 2 } as const;
