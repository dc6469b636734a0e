export { processFile } from './run.js';
export type { RunSummary } from './run.js';
export type { ProcessFileOptions, RunPaths } from './options.js';
export { runPaths, formatFromPath } from './options.js';
export { main } from './main.js';
export { parseCli, USAGE } from './cli-args.js';
export type { CliCommand } from './cli-args.js';
export { CsvError, csvErrorExitCodes } from './errors.js';
export type { CsvErrorCodeName } from './errors.js';
export { parseFieldMap, inferFieldMap } from './mapping.js';
export type { FieldMap } from './mapping.js';
export { openSource, frameRecords } from './source/index.js';
export type {
  Source, SourceItem, SourceRow, SourceReject, SourceOptions, SourcePosition, InputFormat, InputEncoding, RejectCode,
  RawRecord, FramerOptions,
} from './source/index.js';
export { resultColumns } from './sink/result-columns.js';
export type { ResultColumns } from './sink/result-columns.js';
export { formatCsvLine, formatCell } from './sink/csv-format.js';
export type { CellValue } from './sink/csv-format.js';
export { REJECT_COLUMNS } from './sink/sink.js';
export { createProgress, silentProgress } from './progress.js';
export type { ProgressReporter, ProgressOptions } from './progress.js';
export { summaryJson, summaryTable } from './summary.js';
export type { RunTotals } from './totals.js';
export type { DryRunPlan } from './dry-run.js';
export type { Checkpoint } from './checkpoint.js';
export { exportReview } from './review/export.js';
export type { ReviewExportOptions, ReviewExportSummary } from './review/export.js';
export { applyReview } from './review/apply.js';
export type { ReviewApplyOptions, ReviewApplySummary, SkippedDecision } from './review/apply.js';
