export { createLogger, createSilentLogger } from './logger.js';
export type { Logger, LoggerOptions, LogLevel, LogFields } from './logger.js';
export { createRedactor, REDACTED } from './redactor.js';
export type { Redactor } from './redactor.js';
