import type { Logger } from '@dq/core';
import { onStopSignals } from '@dq/core/cli';
import type { CliCommand } from '../cli-args.js';
import type { CliIo } from '../main.js';
import { reviewApply, summaryOfFailedApply } from './apply.js';
import { stopSignals } from '../stop-signals.js';
import { reviewExport } from './export.js';

/**
 * `dq-pg review export` and `dq-pg review apply`: the summary as one JSON line on stdout; each bad
 * decision cell and each row changed since the export as a line on stderr naming it.
 */
export async function reviewCommand(
  cmd: Extract<CliCommand, { command: 'review-export' | 'review-apply' }>,
  logger: Logger,
  io: CliIo,
  out: (value: unknown) => void,
): Promise<number> {
  const err = (text: string): void => io.err(logger.redactor.redact(`dq-pg: ${text}\n`));
  if (cmd.command === 'review-export') {
    // Export writes nothing to the database and its file only whole: a signal (any of them) cancels
    // the statement under way and leaves the file as it was (exit 75; the same command writes it).
    const stop = new AbortController();
    const release = onStopSignals((signal) => {
      if (stop.signal.aborted) return;
      err(`${signal}: stopping the export (${cmd.output} is written whole or not at all)`);
      stop.abort(new Error(`by ${signal}`));
    });
    const summary = await reviewExport({
      db: cmd.db ?? '',
      runId: cmd.runId,
      output: cmd.output,
      logger,
      signal: stop.signal,
      ...(cmd.classes ? { classes: cmd.classes } : {}),
      ...(cmd.table ? { table: cmd.table } : {}),
    }).finally(() => {
      // Once a signal came, the handler stays until the process exits (see the apply's below).
      if (!stop.signal.aborted) release();
    });
    if (summary.missing > 0) err(`warning: ${summary.missing} review row(s) of run ${summary.runId} are no longer in ${summary.table} and were not exported`);
    if (summary.rows === 0) err(`nothing awaits review in run ${summary.runId}: ${summary.output} has the header only`);
    const also = summary.alsoAwaiting;
    if (also.rows > 0) {
      const runs = also.runs.length > 3 ? `${also.runs.slice(0, 3).join(', ')} and ${also.runs.length - 3} more` : also.runs.join(', ');
      const those = also.runs.length === 1 ? 'that run' : 'those runs';
      err(
        `note: ${also.rows} of the ${summary.rows} row(s) also await a decision in run(s) ${runs}: no review of ${those} has been applied yet, and an export of ${those} lists them too. ` +
          `Whichever file is applied first decides such a row; applying the other file then counts the same decision as applied and refuses a different one by name (exit 4)`,
      );
    }
    out({ type: 'summary', ...summary });
    return summary.exitCode;
  }
  // The first signal lets the page under way commit and starts no other, a second cancels that
  // page (the server rolls it back); exit 75 either way, with the summary and a line saying how far it got.
  const signals = stopSignals(err, {
    first: 'stopping after the page in flight is written; a second SIGINT or SIGTERM cancels that page and ends now',
    second: 'cancelling the page in flight (nothing of it is written) and ending now',
    reason: 'by',
  });
  try {
    const summary = await reviewApply({
      db: cmd.db ?? '',
      input: cmd.input,
      logger,
      signal: signals.stop,
      stopNow: signals.stopNow,
      ...(cmd.runId ? { runId: cmd.runId } : {}),
      ...(cmd.batchSize ? { batchSize: cmd.batchSize } : {}),
    }).catch((e: unknown) => {
      // An apply that failed part way (its database lost) still prints its summary line.
      const failed = summaryOfFailedApply(e);
      if (failed) out({ type: 'summary', ...failed });
      throw e;
    });
    for (const b of summary.bad) err(`bad-decision: ${cmd.input} line ${b.line} (key ${b.key}): ${b.message}`);
    if (summary.badDecisions > summary.bad.length) err(`bad-decision: … and ${summary.badDecisions - summary.bad.length} more`);
    const same = summary.sameAsApplied;
    if (same.rows > 0) {
      err(`note: ${same.rows} row(s) of ${cmd.input} were decided the same way already by review run(s) ${same.runs.join(', ')}: nothing to write for them`);
    }
    for (const k of summary.conflictKeys) err(`conflict: key ${k} changed in ${summary.table} since the export; not written (export again to decide it)`);
    if (summary.conflicts > summary.conflictKeys.length) err(`conflict: … and ${summary.conflicts - summary.conflictKeys.length} more`);
    for (const k of summary.lockedKeys)
      err(
        `locked: key ${k} is locked by another session (an open transaction) in ${summary.table}; not written (apply ${cmd.input} again with a new --run-id once it is released)`,
      );
    if (summary.locked > summary.lockedKeys.length) err(`locked: … and ${summary.locked - summary.lockedKeys.length} more`);
    if (summary.runId === null) err(`nothing to apply: ${cmd.input} has no rows`);
    if (summary.error) err(`${summary.error.code}: ${summary.error.message}`);
    out({ type: 'summary', ...summary });
    return summary.exitCode;
  } finally {
    signals.release();
  }
}
