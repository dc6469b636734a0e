/**
 * The engine's public contract. Every connector (CSV, Postgres, Kafka) is a source and a sink around
 * these types; nothing connector-specific belongs here.
 */

export type Mode = 'address' | 'company' | 'tr' | 'vat';
export type ResultClass = 'A' | 'B' | 'C' | 'D' | 'E' | 'F';
export type RecordStatus = 'accepted' | 'review' | 'invalid' | 'invalid-input' | 'unavailable';
export type PolicyStatus = Extract<RecordStatus, 'accepted' | 'review' | 'invalid'>;

/** Request fields of one record, already extracted by the connector through its mapping. */
export type EngineRecord = Readonly<Record<string, string | number | null | undefined>>;

/** Process exit codes (ARCHITECTURE.md): schedulers branch on these. */
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
  /** temporarily unavailable: worth a retry by the scheduler */
  TEMPFAIL: 75,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
