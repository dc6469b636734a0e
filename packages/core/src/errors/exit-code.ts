/**
 * Process exit codes (the README's table, docs/architecture.md): schedulers branch on these. Every
 * CLI of the project exits with one of them, worked out by `exitCodeFor` (engine/exit-codes.ts).
 */
export const ExitCode = {
  /** done */
  OK: 0,
  /** unexpected error (a bug, or an environment problem we did not foresee) */
  UNEXPECTED: 1,
  /** bad usage or configuration */
  USAGE: 2,
  /** credentials, account or quota stop the run: not worth retrying until a person acts */
  STOP: 3,
  /** done, but the share of failed records passed --max-failed */
  MAX_FAILED: 4,
  /** spending cap reached (--max-calls); resume to continue */
  MAX_CALLS: 5,
  /** temporarily unavailable: worth a retry by the scheduler */
  TEMPFAIL: 75,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
