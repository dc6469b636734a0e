// Lint rules for the whole repository: `npm run lint` (every project) or `npx nx lint <project>`.
// Type-aware: each file is checked with the program of its project's tsconfig (tests: tsconfig.tests.json).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Every workspace package, by name. Where each may be imported from is set out below. */
const CONNECTORS = ['@dq/csv-processor', '@dq/postgres-cleanser', '@dq/kafka-enricher', '@dq/refdata-sync'];
const TOOLS = ['@dq/sandbox', '@dq/bench', '@dq/test-support', '@dq/demo'];

/** Imports no file may make: into another package's src/dist, or climbing out of its own package. */
const EVERYWHERE = [
  {
    group: ['@dq/*/src', '@dq/*/src/**', '@dq/*/dist', '@dq/*/dist/**'],
    message: "Import the package by name ('@dq/core', '@dq/core/engine', ...): its package.json exports are its interface.",
  },
  {
    regex: String.raw`^(\.\./)+(packages|apps|tools|test|core|csv-processor|postgres-cleanser|kafka-enricher|refdata-sync|sandbox|bench|demo|support)(/|$)`,
    message: 'A relative path into another package: import that package by name (a dependency in package.json).',
  },
  {
    regex: String.raw`^\.\.?/(.*/)?dist(/|$)`,
    message: "Import the source ('../src/...'), not the build output: dist may be stale or missing.",
  },
];

/** no-restricted-imports for files that must not import `names`; `why` says what to do instead. */
function forbid(names, why) {
  return {
    'no-restricted-imports': ['error', { patterns: [...EVERYWHERE, { group: names.flatMap((n) => [n, `${n}/**`]), message: why }] }],
  };
}

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '**/.nx/**',
      '**/coverage/**',
      'tools/bench/results/**',
      // Launchers of the built CLIs (plain JS, two lines each).
      '**/bin/*.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // A project's own tsconfig first: the tests' program also holds the src files they import.
        project: ['./packages/*/tsconfig.json', './apps/*/tsconfig.json', './tools/*/tsconfig.json', './test/support/tsconfig.json', './tsconfig.tests.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The rules this config is for: a promise nobody awaits loses its error (an unhandled
      // rejection ends the process) and its ordering.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      'no-restricted-imports': ['error', { patterns: EVERYWHERE }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Stylistic or too noisy for this code base (hundreds of hits, no bugs found among them):
      // `x!` after a check the compiler cannot follow (noUncheckedIndexedAccess) is deliberate here.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Template literals with numbers and other non-strings are used on purpose in messages.
      '@typescript-eslint/restrict-template-expressions': 'off',
      // Parsed JSON and zod-checked values are `any`/`unknown` by nature; the type checker covers the rest.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // Errors travel as `unknown` (caught, abort reasons) and are rethrown as they came; once narrowed
      // (`!== undefined`) the rules cannot tell such a rethrow from throwing a non-error: every hit was one.
      '@typescript-eslint/only-throw-error': 'off',
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
      // Reports assertions that are needed (after `??`): its fixes broke the build here.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // A `let` read by a closure before its one assignment cannot be `const`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `async` without `await` keeps a function's errors as rejections and matches Promise-returning interfaces.
      '@typescript-eslint/require-await': 'off',
      // The objects here are closures, not classes using `this`: every hit was a destructured closure.
      '@typescript-eslint/unbound-method': 'off',
      // `String(x)` of unknown values (caught errors, parsed JSON) is deliberate: every hit was such a fallback.
      '@typescript-eslint/no-base-to-string': 'off',
      // Control characters in regexes are deliberate: ASCII ranges and the cache key's separator.
      'no-control-regex': 'off',
    },
  },
  {
    // Tests read JSON answers and summaries loosely.
    files: ['**/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  // Boundaries. core is used by everyone and uses no other package of ours.
  {
    files: ['packages/core/**/*.ts'],
    rules: forbid([...CONNECTORS, ...TOOLS.filter((t) => t !== '@dq/test-support')], 'core depends on no connector and no tool.'),
  },
  {
    files: ['packages/core/src/**/*.ts'],
    rules: forbid([...CONNECTORS, ...TOOLS], 'core depends on no connector and no tool.'),
  },
  // A connector uses core, never another connector; its production code never a tool or test support.
  {
    files: ['packages/csv-processor/**/*.ts', 'packages/postgres-cleanser/**/*.ts', 'packages/kafka-enricher/**/*.ts', 'apps/refdata-sync/**/*.ts'],
    rules: forbid(CONNECTORS, 'A connector does not import another connector: what they share belongs in @dq/core.'),
  },
  {
    files: [
      'packages/csv-processor/src/**/*.ts',
      'packages/postgres-cleanser/src/**/*.ts',
      'packages/kafka-enricher/src/**/*.ts',
      'apps/refdata-sync/src/**/*.ts',
    ],
    rules: forbid([...CONNECTORS, ...TOOLS], 'Production code imports neither another connector nor a tool (the sandbox, benchmarks, test support, the demo).'),
  },
  // The sandbox is the platform: it shares the contract's types from core, and nothing else of ours.
  {
    files: ['tools/sandbox/src/**/*.ts'],
    rules: forbid([...CONNECTORS, '@dq/bench', '@dq/test-support', '@dq/demo'], 'The sandbox stands alone: it uses only @dq/core.'),
  },
);
