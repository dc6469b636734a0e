// The hand-written logger core had before pino (kept as the benchmark's reference only).
import { DqError } from '@dq/core/errors';
import { createRedactor } from './hand-redactor.js';
import type { Redactor } from './hand-redactor.js';

/** Log levels, least to most severe; `silent` writes nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Structured fields of one log line. Error values are written as code, message, status, request id. */
export type LogFields = Readonly<Record<string, unknown>>;

/** A JSON-lines logger whose every line passes through a {@link Redactor}. */
export interface Logger {
  readonly level: LogLevel;
  /** The redactor applied to every line; register secrets here (`logger.redactor.add(key)`). */
  readonly redactor: Redactor;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger writing the same way with `bindings` added to every line. */
  child(bindings: LogFields): Logger;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Least severe level written (default `info`). */
  level?: LogLevel;
  /** Receives each line, newline included (default: `process.stderr.write`). */
  write?: (line: string) => void;
  /** Redactor to use (default: a new one); share one so every secret registered anywhere is hidden. */
  redactor?: Redactor;
  /** Fields added to every line. */
  bindings?: LogFields;
  /** Clock for the `time` field (default `Date.now`), in ms since the epoch. */
  now?: () => number;
}

/**
 * Creates a JSON-lines logger: `{"time":"…","level":"warn","msg":"…",…fields}`. Credentials in
 * messages and fields are replaced with `[redacted]` before the line is written.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const { level = 'info', write = (line: string) => void process.stderr.write(line), redactor = createRedactor(), bindings = {}, now = Date.now } = options;
  const threshold = RANK[level];

  const emit = (lineLevel: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields): void => {
    if (RANK[lineLevel] < threshold) return;
    const record = redactor.redactValue({
      time: new Date(now()).toISOString(),
      level: lineLevel,
      msg,
      ...serialiseFields(bindings),
      ...serialiseFields(fields ?? {}),
    });
    // Second pass over the whole line: a registered secret JSON-escaped differently is still caught.
    write(`${redactor.redact(safeStringify(record))}\n`);
  };

  return {
    level,
    redactor,
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (extra) => createLogger({ level, write, redactor, now, bindings: { ...bindings, ...extra } }),
  };
}

/** A logger that writes nothing (level `silent`), with its own redactor. */
export function createSilentLogger(): Logger {
  return createLogger({ level: 'silent', write: () => undefined });
}

function serialiseFields(fields: LogFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) out[key] = value instanceof Error ? serialiseError(value) : value;
  return out;
}

function serialiseError(e: Error, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = { name: e.name, message: e.message };
  if (e instanceof DqError) {
    out['code'] = e.code;
    out['retriable'] = e.retriable;
    if (e.status !== undefined) out['status'] = e.status;
    if (e.requestId !== undefined) out['requestId'] = e.requestId;
  } else {
    const code: unknown = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string') out['code'] = code;
  }
  if (e.cause instanceof Error && depth < 3) out['cause'] = serialiseError(e.cause, depth + 1);
  return out;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    return JSON.stringify({ level: 'error', msg: 'log line could not be serialised' });
  }
}
