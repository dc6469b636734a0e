// The package's interface: processing a file (programmatic and CLI), its options, summary, progress and errors.
// Internals (sources, framer, sink formatting) are not exported: tests import them from src/.
export { processFile } from './run.js';
export type { RunSummary } from './run.js';
export type { ProcessFileOptions, RunPaths } from './options.js';
export { runPaths, formatFromPath } from './options.js';
// The paths a run uses: derived from the file --output leads to (a symlink followed).
export { resolveRunPaths } from './run-files.js';
export { main } from './main.js';
export { USAGE } from './cli-args.js';
export { CsvError } from './errors.js';
export type { FieldMap } from './mapping.js';
export type { InputFormat, InputEncoding } from './source/index.js';
export { createProgress, silentProgress } from './progress.js';
export type { ProgressReporter, ProgressOptions } from './progress.js';
export { summaryJson, summaryTable } from './summary.js';
export type { RunTotals } from './totals.js';
export type { DryRunPlan } from './dry-run.js';
export { exportReview } from './review/export.js';
export type { ReviewExportOptions, ReviewExportSummary } from './review/export.js';
export { applyReview } from './review/apply.js';
export type { ReviewApplyOptions, ReviewApplySummary, SkippedDecision } from './review/apply.js';
export { writeCsvReport } from './report.js';
// The CSV line writer the sink uses: tools/bench compares it with @fast-csv/format.
export { formatCsvLine } from './sink/csv-format.js';
