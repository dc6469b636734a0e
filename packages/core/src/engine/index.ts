export type {
  Mode,
  ResultClass,
  RecordStatus,
  PolicyStatus,
  EngineRecord,
  AddressEndpoint,
  CompanySearchOptions,
  RecordError,
  RecordResult,
  CachedResult,
  ResultCache,
  RunReport,
  BudgetReport,
  RunPlan,
  ProcessOptions,
  PlanOptions,
  Engine,
} from './types.js';
export { ExitCode } from './types.js';
export { createEngine } from './engine.js';
export { answeringPlatform } from './platform.js';
export { defaultThreads } from './config.js';
export type { EngineConfig, EngineRetryOptions } from './config.js';
export { DEFAULT_POLICY, resolvePolicy } from './policy.js';
export { MODE_FIELDS, mapRecord } from './record-mapping.js';
export type { RequestFields } from './record-mapping.js';
export { autoMappingHint, mapFlag, unmappedLookalikes } from './field-aliases.js';
export type { FieldColumn } from './field-aliases.js';
export { createMemoryCache } from './memory-cache.js';
export type { MemoryCacheOptions } from './memory-cache.js';
export { exitCodeFor, exitCodeForError, exitCodeForReport } from './exit-codes.js';
export { stopAdvice, stopKind } from './stop-advice.js';
export type { ResumeWords, StopAdvice, StopKind } from './stop-advice.js';
export { OUTAGE_WINDOW, PLATFORM_UNREACHABLE } from './outage-watch.js';
export type { ExitPolicy, RunOutcome } from './exit-codes.js';
export { emptyRunReport, zeroByClass, zeroByStatus } from './run-report.js';
