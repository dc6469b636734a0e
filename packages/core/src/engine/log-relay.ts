import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import type { Logger, LogLevel } from '../log/index.js';

const LEVELS = new Set<LogLevel>(['debug', 'info', 'warn', 'error']);

/** The engine's end of the channel its workers log through. */
export interface LogRelay {
  /** Channel name to hand to the workers. */
  readonly name: string;
  close(): void;
}

/**
 * Re-emits the JSON lines workers write through the engine's logger, so a caller's logger (and its
 * redactor) sees every line of the run, whichever thread wrote it. Lines are already redacted in
 * the worker and pass the engine's redactor again.
 */
export function openLogRelay(logger: Logger): LogRelay {
  const name = `dq-engine-log-${randomUUID()}`;
  const channel = new BroadcastChannel(name);
  channel.unref();
  channel.onmessage = (event: unknown) => {
    const data = (event as { data?: unknown }).data;
    if (typeof data !== 'string') return;
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return;
    }
    // The engine's logger stamps its own time; the worker's is dropped rather than written twice.
    const { level, msg, time: _time, ...fields } = line;
    if (typeof level === 'string' && LEVELS.has(level as LogLevel) && typeof msg === 'string') {
      logger[level as Exclude<LogLevel, 'silent'>](msg, fields);
    }
  };
  return { name, close: () => channel.close() };
}

/** The worker's end: a `write` for `createLogger` that posts each line to the engine. */
export function relayWriter(name: string): (line: string) => void {
  const channel = new BroadcastChannel(name);
  channel.unref();
  return (line) => channel.postMessage(line.trimEnd());
}
