import { ensureThrottleTable } from '@dq/core/throttle-pg';
import { createLogger, ExitCode } from '@dq/core';
import type { Logger } from '@dq/core';
import { cleanse, exitCodeFor } from './cleanse.js';
import { parseCli, USAGE } from './cli-args.js';
import { ensureSchema, STATE_SCHEMA } from './bookkeeping.js';
import { connect, dbTarget } from './db.js';
import { usageError } from './errors.js';
import { rollback } from './rollback.js';
import { status } from './status.js';
import type { RunStatus } from './status.js';

/** Where the CLI writes: stdout for results (JSON lines), stderr for logs and messages. */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

const processIo: CliIo = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
};

/**
 * Runs `dq-pg` with `argv` (without node and script) and returns the exit code. Results go to
 * stdout as JSON lines, logs and errors to stderr; every line passes the redactor, which knows the
 * database password and the API key.
 */
export async function main(argv: readonly string[], io: CliIo = processIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const logger = createLogger({ level: 'warn', write: io.err });
  const out = (value: unknown) => io.out(`${logger.redactor.redact(JSON.stringify(value))}\n`);
  try {
    const cmd = parseCli(argv, env);
    if (cmd.command === 'help') {
      io.out(USAGE);
      return ExitCode.OK;
    }
    if (cmd.command === 'status') {
      dbTarget(cmd.db, logger.redactor);
      const runs = await status({ db: cmd.db ?? '', logger, ...(cmd.runId ? { runId: cmd.runId } : {}) });
      if (cmd.json) for (const r of runs) out(r);
      else io.out(statusTable(runs));
      return ExitCode.OK;
    }
    if (cmd.command === 'init') {
      const client = await connect(dbTarget(cmd.db, logger.redactor));
      try {
        const version = await ensureSchema(client);
        // The account's shared rate budget (the root README's "One rate budget per account").
        await ensureThrottleTable(client);
        out({ schema: STATE_SCHEMA, version });
      } finally {
        await client.end().catch(() => undefined);
      }
      return ExitCode.OK;
    }
    if (cmd.command === 'rollback') {
      const summary = await rollback({ db: cmd.db ?? '', runId: cmd.runId, logger });
      out(summary);
      return summary.exitCode;
    }
    const o = cmd.options;
    dbTarget(o.db, logger.redactor);
    if (!o.baseUrl) throw usageError('--base-url', 'required: the platform URL (or set DQ_BASE_URL); dq-sandbox serves one locally');
    if (!o.apiKey) throw usageError('--api-key', 'required: the API key (prefer DQ_API_KEY)');
    logger.redactor.add(o.apiKey);
    const controller = new AbortController();
    const onSignal = (signal: NodeJS.Signals): void => {
      io.err(`dq-pg: ${signal}: stopping after the page in flight is written\n`);
      controller.abort(new Error(`interrupted by ${signal}`));
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const summary = await cleanse({
        ...o, baseUrl: o.baseUrl, apiKey: o.apiKey, logger, signal: controller.signal,
        onChange: (change) => out({ type: 'change', ...change }),
        onHint: (text) => io.err(logger.redactor.redact(`dq-pg: hint: ${text}\n`)),
      });
      if (!summary.dryRun && summary.error) io.err(logger.redactor.redact(`dq-pg: ${summary.error.code}: ${summary.error.message}\n`));
      out({ type: 'summary', ...summary });
      return summary.exitCode;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  } catch (err) {
    return report(err, logger, io);
  }
}

function report(err: unknown, logger: Logger, io: CliIo): number {
  const code = exitCodeFor(err);
  const e = err as { code?: unknown; message?: unknown; stack?: unknown };
  const text = code === ExitCode.UNEXPECTED
    ? `dq-pg: unexpected error: ${String(e?.stack ?? err)}\n`
    : `dq-pg: ${typeof e?.code === 'string' ? `${e.code}: ` : ''}${String(e?.message ?? err)}\n`;
  io.err(logger.redactor.redact(text));
  return code;
}

function statusTable(runs: readonly RunStatus[]): string {
  if (runs.length === 0) return 'no dq-pg runs in this database\n';
  const head = ['run', 'table', 'state', 'rows', 'written', 'unchanged', 'conflicts', 'review', 'invalid', 'unavail', 'calls', 'ranges', 'restored'];
  const body = runs.map((r) => [
    r.runId, r.table, r.lastError ? `${r.state} (${r.lastError.code})` : r.state, r.rows, r.written, r.unchanged, r.conflicts,
    r.review, r.invalid + r.invalidInput, r.unavailable, r.apiCalls, `${r.rangesDone}/${r.ranges}`, r.restored,
  ].map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  const resume = runs.filter((r) => r.resume).map((r) => `to resume ${r.runId} (${r.state}): ${r.resume} (with --db and the API settings)`);
  return `${[line(head), ...body.map(line), ...(resume.length ? ['', ...resume] : [])].join('\n')}\n`;
}
