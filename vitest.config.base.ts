import { configDefaults, defineConfig } from 'vitest/config';

/** Shared test settings; each project merges these into its own config. */
const base = defineConfig({
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
export default base;

/**
 * Test files run one at a time by default: the tests that measure a rate or a speed must not share
 * two cores with another file. Projects whose tests wait on servers, timeouts and child processes
 * more than they compute, and measure no rate against a reference, run two or three files at once
 * instead (their CI time is about halved). A file of such a project that does measure one runs
 * after the others, alone ({@link atOnceThenTimed}).
 */
export const filesAtOnce = (files: number) => ({ fileParallelism: true, maxWorkers: files }) as const;
export const twoFilesAtOnce = filesAtOnce(2);

/**
 * The two groups of a project whose files run `atOnce` at a time (default two), except `timed` (files that measure a
 * rate, a pacing, a delay or peak memory): those run after the others, one at a time. `include`
 * replaces the shared pattern for the first group; `setupFiles` are added to the shared ones in both.
 */
export function atOnceThenTimed(name: string, timed: string[], extra: { include?: string[]; setupFiles?: string[]; atOnce?: number } = {}) {
  const setupFiles = extra.setupFiles ?? [];
  return defineConfig({
    test: {
      projects: [
        {
          extends: true,
          test: {
            name,
            ...(extra.include ? { include: extra.include } : {}),
            exclude: [...configDefaults.exclude, ...timed],
            ...filesAtOnce(extra.atOnce ?? 2),
            sequence: { groupOrder: 0 },
            setupFiles,
          },
        },
        // Not `extends`: that would add the shared include pattern to this one.
        {
          test: {
            ...base.test,
            name: `${name} (timed)`,
            include: timed,
            sequence: { groupOrder: 1 },
            setupFiles: [...(base.test?.setupFiles as string[]), ...setupFiles],
          },
        },
      ],
    },
  });
}
