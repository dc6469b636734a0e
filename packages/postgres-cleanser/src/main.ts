import { ensureThrottleTable, ForeignThrottleTable } from '@dq/core/throttle-pg';
import { createLogger, DqError, ExitCode } from '@dq/core';
import { cliFailure } from '@dq/core/cli';
import type { Logger } from '@dq/core';
import { cleanse, STOP_GRACE_MS, summaryOfFailure } from './cleanse.js';
import { parseCli, USAGE } from './cli-args.js';
import { ensureStoreSchema, STORE_SCHEMA, storeSchemaError } from '@dq/core/store';
import { ensureSchema, STATE_SCHEMA } from './bookkeeping.js';
import { connect, dbTarget } from './db.js';
import { CleanseError, connectionLost, usageError } from './errors.js';
import { rollback } from './rollback.js';
import { status } from './status.js';
import { stopSignals } from './stop-signals.js';
import type { RunStatus } from './status.js';
import { checkReportPath, reportAfterCleanse, reportOfRun } from './report.js';
import { WholeFileError } from '@dq/core/files';
import type { RunReport } from '@dq/core';

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
    if (cmd.command === 'report') {
      await checkReportPath(cmd.output, '--output');
      const summary = await reportOfRun({ db: cmd.db ?? '', runId: cmd.runId, output: cmd.output, logger });
      out(summary);
      io.err(`dq-pg: report written to ${cmd.output}\n`);
      return ExitCode.OK;
    }
    if (cmd.command === 'init') {
      const target = dbTarget(cmd.db, logger.redactor);
      const client = await connect(target, 'dq-pg', { queryTimeoutMs: 0, writes: true });
      try {
        const version = await ensureSchema(client);
        // The result store's schema, created here too, so an ETL role without CREATE can use it.
        await ensureStoreSchema(client).catch((e: unknown) => {
          throw storeSchemaError(`${target.where} (schema ${STORE_SCHEMA})`, e, 'dq-pg init');
        });
        // The account's shared rate budget (the root README's "One rate budget per account").
        await ensureThrottleTable(client).catch((e: unknown) => {
          if (e instanceof ForeignThrottleTable) throw new CleanseError('usage', e.message, { cause: e });
          if ((e as { code?: unknown }).code !== '42501') throw e;
          throw new DqError(
            `the database user may not create or upgrade the shared rate budget's tables dq_throttle and dq_throttle_keys (only their owner may): run "dq-pg init" once as the owner of dq_throttle`,
            { code: 'budget-permission-denied', retriable: false, scope: 'run', cause: e },
          );
        });
        // One JSON line: what `init` made sure exists.
        out({ schema: STATE_SCHEMA, version, store: STORE_SCHEMA, budget: 'dq_throttle' });
      } finally {
        await client.end().catch(() => undefined);
      }
      return ExitCode.OK;
    }
    if (cmd.command === 'rollback') {
      // Each batch of the rollback is a transaction of its own: the first signal lets the batch
      // under way commit and starts no other, a second cancels it (the server rolls it back). Exit
      // 75 either way, with the summary and one line saying how far the rollback got; the same
      // command finishes it.
      const signals = stopSignals((text) => io.err(`dq-pg: ${text}\n`), {
        first: 'stopping the rollback once the batch under way has committed; a second SIGINT or SIGTERM cancels that batch and ends now',
        second: 'cancelling the batch under way (nothing of it is restored) and ending now',
        reason: 'by',
      });
      try {
        const summary = await rollback({ db: cmd.db ?? '', runId: cmd.runId, logger, signal: signals.stop, stopNow: signals.stopNow });
        if (summary.error) io.err(logger.redactor.redact(`dq-pg: ${summary.error.code}: ${summary.error.message}\n`));
        out(summary);
        return summary.exitCode;
      } finally {
        signals.release();
      }
    }
    if (cmd.command === 'review-export' || cmd.command === 'review-apply') {
      // Loaded for review only: its CSV parser and writer are not part of every run's start.
      const { reviewCommand } = await import('./review/command.js');
      return await reviewCommand(cmd, logger, io, out);
    }
    const o = cmd.options;
    dbTarget(o.db, logger.redactor);
    if (!o.baseUrl) throw usageError('--base-url', 'required: the platform URL (or set DQ_BASE_URL); dq-sandbox serves one locally');
    if (!o.apiKey) throw usageError('--api-key', 'required: the API key (prefer DQ_API_KEY)');
    logger.redactor.add(o.apiKey);
    if (o.report !== undefined) await checkReportPath(o.report, '--report');
    let engineReport: RunReport | undefined;
    // The first signal stops the run after the pages under way; a second ends it at once (exit 75
    // either way, the summary printed).
    const signals = stopSignals((text) => io.err(`dq-pg: ${text}\n`), {
      first: `stopping: no new page is started, the pages under way are written once their calls end (at most ${STOP_GRACE_MS / 1000} s); a second SIGINT or SIGTERM ends the run now`,
      second: 'ending the run now; the pages under way are not written (the answers that arrived are kept in the result store)',
      reason: 'interrupted by',
    });
    try {
      const summary = await cleanse({
        ...o,
        baseUrl: o.baseUrl,
        apiKey: o.apiKey,
        logger,
        signal: signals.stop,
        stopNow: signals.stopNow,
        onChange: (change) => out({ type: 'change', ...change }),
        onHint: (text) => io.err(logger.redactor.redact(`dq-pg: hint: ${text}\n`)),
        onEngineReport: (r) => void (engineReport = r),
      });
      if (summary.error) io.err(logger.redactor.redact(`dq-pg: ${summary.error.code}: ${summary.error.message}\n`));
      const printed = { type: 'summary', ...summary };
      out(printed);
      if (o.report !== undefined) {
        try {
          await reportAfterCleanse(o.report, o.db, printed, engineReport, logger);
          io.err(`dq-pg: report written to ${o.report}\n`);
        } catch (e) {
          if (!(e instanceof WholeFileError)) throw e;
          // The run's rows are written and its summary printed: say so, and still fail the step.
          io.err(
            logger.redactor.redact(
              `dq-pg: report-unwritable: ${e.message}; the run itself is complete as summarised${summary.runId ? ` (dq-pg report --run ${summary.runId} --output <file> writes it again)` : ''}\n`,
            ),
          );
          return summary.exitCode === ExitCode.OK ? ExitCode.USAGE : summary.exitCode;
        }
      }
      return summary.exitCode;
    } catch (err) {
      // A run that failed once it was recorded still prints its summary line, with the error, and
      // writes the --report it was asked for (a step after it may wait for that file): with the
      // corrections when its database can still be read, else without them.
      const failed = summaryOfFailure(err);
      if (failed) {
        const printed = { type: 'summary', ...failed };
        out(printed);
        if (o.report !== undefined) await reportOfFailedRun(o.report, o.db, printed, engineReport, logger, io);
      }
      throw err;
    } finally {
      signals.release();
    }
  } catch (err) {
    return report(err, logger, io);
  }
}

/** Writes the --report of a run that failed, saying on stderr what it holds or why it could not be written. */
async function reportOfFailedRun(
  path: string,
  db: string | undefined,
  summary: { type: string; runId?: string | null },
  engine: RunReport | undefined,
  logger: Logger,
  io: CliIo,
): Promise<void> {
  const again = summary.runId ? `; dq-pg report --run ${summary.runId} --output ${path} writes it whole once the database answers` : '';
  try {
    const { detailsUnread } = await reportAfterCleanse(path, db ?? '', summary, engine, logger, { detailsMayFail: true });
    io.err(
      detailsUnread === undefined
        ? `dq-pg: report of the failed run written to ${path}\n`
        : logger.redactor.redact(`dq-pg: report of the failed run written to ${path}, without its corrections (the database could not be read)${again}\n`),
    );
  } catch (e) {
    io.err(logger.redactor.redact(`dq-pg: report-unwritable: ${e instanceof Error ? e.message : String(e)}${again}\n`));
  }
}

function report(err: unknown, logger: Logger, io: CliIo): number {
  // A raw node-postgres error of a lost connection becomes dq-pg's `db-unreachable` (exit 75). A
  // result store's error left here is that of a --store apart from --db (cleanse turns the default
  // store's, a schema of --db, into `db-unreachable`): it names that store.
  const failure = cliFailure('dq-pg', connectionLost(err, 'during the command', undefined, true), (t) => logger.redactor.redact(t));
  io.err(failure.text);
  return failure.exitCode;
}

function statusTable(runs: readonly RunStatus[]): string {
  if (runs.length === 0) return 'no dq-pg runs in this database\n';
  const head = ['run', 'kind', 'table', 'state', 'rows', 'written', 'unchanged', 'conflicts', 'review', 'invalid', 'unavail', 'calls', 'ranges', 'restored'];
  const body = runs.map((r) =>
    [
      r.runId,
      r.kind,
      r.table,
      `${r.lastError ? `${r.state} (${r.lastError.code})` : r.state}${r.rollback ? `, rollback ${r.rollback.state}` : ''}`,
      r.rows,
      r.written,
      r.unchanged,
      r.conflicts,
      r.review,
      r.invalid + r.invalidInput,
      r.unavailable,
      r.apiCalls,
      `${r.rangesDone}/${r.ranges}`,
      r.restored,
    ].map(String),
  );
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const resume = runs.filter((r) => r.resume).map((r) => `to resume ${r.runId} (${r.state}): ${r.resume} (with --db and the API settings)`);
  const finish = runs.filter((r) => r.rollback?.state === 'unfinished').map((r) => `to finish the rollback of ${r.runId}: ${r.rollback!.finish} (with --db)`);
  const after = [...resume, ...finish];
  return `${[line(head), ...body.map(line), ...(after.length ? ['', ...after] : [])].join('\n')}\n`;
}
