import { pino } from 'pino';
import type { DestinationStream, Logger as PinoLogger } from 'pino';
import { DqError } from '../errors/dq-error.js';
import { createRedactor, REDACTED } from './redactor.js';
import type { Redactor } from './redactor.js';

/** Log levels, least to most severe; `silent` writes nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

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
  /** Receives each line, newline included (default: a synchronous write to stderr, fd 2). */
  write?: (line: string) => void;
  /** Redactor to use (default: a new one); share one so every secret registered anywhere is hidden. */
  redactor?: Redactor;
  /** Fields added to every line. */
  bindings?: LogFields;
  /** Clock for the `time` field (default `Date.now`), in ms since the epoch. */
  now?: () => number;
}

// Keys whose values are credentials: replaced by pino's `redact` before the line is serialised,
// at the top level and under `headers`. Only fixed paths: pino's wildcard paths (`*.password`)
// copy the whole record and cut throughput by 3-6x (tools/bench log-metrics); secret-named keys
// deeper down are caught by the redactor's pass over the finished line ("password":"…" at any depth).
const SECRET_KEYS = [
  'apiKey',
  'api_key',
  'apikey',
  'api-key',
  'password',
  'passwd',
  'pwd',
  'secret',
  'token',
  'sessionToken',
  'session_token',
  '_sessionToken',
  'authorization',
  'Authorization',
  'x-auth-token',
  'X-Auth-Token',
  'cookie',
  'Cookie',
];
const REDACT_PATHS = SECRET_KEYS.flatMap((key) => {
  const k = /^[A-Za-z_$][\w$]*$/.test(key) ? key : `["${key}"]`;
  return [k, k.startsWith('[') ? `headers${k}` : `headers.${k}`];
});

/**
 * Creates a JSON-lines logger (pino): `{"level":"warn","time":"…",…bindings,"msg":"…",…fields}`.
 * Two layers keep credentials out: pino's `redact` replaces the values of secret-named keys, and
 * every finished line passes the {@link Redactor}, which replaces registered secrets (API keys,
 * session tokens, passwords) and credential-shaped text (`Bearer …`, `password=…`, URL passwords)
 * with `[redacted]`. Lines go out synchronously, so a CLI that exits right after logging loses none.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const { level = 'info', write, redactor = createRedactor(), bindings = {}, now = Date.now } = options;
  const stream: DestinationStream = write ? { write } : pino.destination({ dest: 2, sync: true });
  const base = pino(
    {
      level,
      base: null,
      timestamp: now === Date.now ? pino.stdTimeFunctions.isoTime : () => `,"time":"${new Date(now()).toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
      // Errors are serialised by `serialiseFields` (code, status, request id; no stack trace).
      serializers: { err: (value: unknown) => value },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      hooks: { streamWrite: (line) => redactor.redact(line) },
    },
    stream,
  );
  return wrap(Object.keys(bindings).length === 0 ? base : base.child(serialiseFields(bindings)), level, redactor);
}

/** A logger that writes nothing (level `silent`), with its own redactor. */
export function createSilentLogger(): Logger {
  return createLogger({ level: 'silent', write: () => undefined });
}

function wrap(p: PinoLogger, level: LogLevel, redactor: Redactor): Logger {
  // The message goes first among the line's own fields (as `msg`), so a reader sees what happened
  // before the details; bindings (the app, the run) come before it.
  const emit = (lineLevel: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields): void => {
    if (!p.isLevelEnabled(lineLevel)) return;
    p[lineLevel]({ msg, ...(fields && serialiseFields(fields)) });
  };
  return {
    level,
    redactor,
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (extra) => wrap(p.child(serialiseFields(extra)), level, redactor),
  };
}

function serialiseFields(fields: LogFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    // bigint offsets (Kafka) as decimal strings: a JSON number past 2^53 would lose digits.
    out[key] = value instanceof Error ? serialiseError(value) : typeof value === 'bigint' ? value.toString() : value;
  }
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
