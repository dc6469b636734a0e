// The package's interface: the commands (programmatic and CLI) with their options, results and errors.
// Internals (SQL builders, page store, bookkeeping schema, preflight) are not exported: tests import them from src/.
export { cleanse, STOP_GRACE_MS, summaryOfFailure } from './cleanse.js';
export type { CleanseOptions, CleanseProgress, CleanseSummary, DryRunSummary, RowChange } from './options.js';
export { DEFAULT_BATCH_SIZE, DEFAULT_PAGES_PER_CLAIM, DEFAULT_WORKERS } from './options.js';
export { rollback } from './rollback.js';
export type { RollbackOptions, RollbackSummary } from './rollback.js';
export { status } from './status.js';
export type { RunStatus } from './status.js';
export { CleanseError } from './errors.js';
export { main } from './main.js';
export type { CliIo } from './main.js';
export { USAGE } from './cli-args.js';
export { reviewExport } from './review/export.js';
export type { ReviewExportOptions, ReviewExportSummary } from './review/export.js';
export { reviewApply } from './review/apply.js';
export type { ReviewApplyOptions, ReviewApplySummary, BadDecision } from './review/apply.js';
