/**
 * `@dq/core`: what a user of the connectors' library needs — the platform clients and their
 * transport, `createEngine` with its configuration and result types, the error classes and exit
 * codes, the logger a configuration takes, and the schemas' types. Everything else (throttle,
 * store, download, CLI flags, the run report, file locks, retry helpers, the schemas' zod values)
 * is imported from its subpath: `@dq/core/engine`, `@dq/core/store`, … (package.json `exports`;
 * docs/architecture.md, "Core's exports").
 */
export * from './clients/index.js';
export { createTransport } from './transport/index.js';
export type { Transport, TransportOptions, TransportRequest, TransportResponse, AuthMode, RetryOptions } from './transport/index.js';

export {
  answeringPlatform,
  createEngine,
  createMemoryCache,
  defaultThreads,
  exitCodeFor,
  exitCodeForError,
  exitCodeForReport,
  stopAdvice,
  stopKind,
} from './engine/index.js';
export type {
  Engine,
  EngineConfig,
  EngineRetryOptions,
  EngineRecord,
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
  MemoryCacheOptions,
  ExitPolicy,
  RunOutcome,
  ResumeWords,
  StopAdvice,
  StopKind,
} from './engine/index.js';

export {
  DqError,
  PlatformError,
  LocalValidationError,
  ContractError,
  TransportError,
  RetriesExhaustedError,
  isRunStop,
  isRetriable,
  ExitCode,
  hasExitCode,
  LOCAL_CODES,
} from './errors/index.js';
export type { DqErrorFields, PlatformErrorFields, TransportErrorCode, DqErrorCode, ProblemCode, ErrorData } from './errors/index.js';

export { createLogger, createSilentLogger } from './log/index.js';
export type { Logger, LoggerOptions, LogLevel, LogFields, Redactor } from './log/index.js';

export type * from './schemas/index.js';
