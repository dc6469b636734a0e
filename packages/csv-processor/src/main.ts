import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createLogger, ExitCode } from '@dq/core';
import { cliFailure, onStopSignals } from '@dq/core/cli';
import { WholeFileError } from '@dq/core/files';
import { commandLineRedactor, parseCli, USAGE } from './cli-args.js';
import { usageError } from './errors.js';
import { createProgress } from './progress.js';
import { processFile } from './run.js';
import { physicalPath } from './run-files.js';
import { failedRecordsLine, summaryObject, summaryTable } from './summary.js';
import { writeCsvReport } from './report.js';

/** How long a stopped run waits for the calls in flight before it cuts them (README "Resume"). */
const STOP_GRACE_MS = 10_000;

/**
 * Runs `dq-csv` with `argv` (without node and script) and returns the exit code. Progress, logs
 * and the table go to stderr; the JSON summary line goes to stdout.
 */
export async function main(argv: readonly string[]): Promise<number> {
  // Loaded for review only: its CSV parser and writer are not part of every run's start.
  if (argv[0] === 'review') return (await import('./review/cli.js')).reviewMain(argv.slice(1));
  let release: (() => void) | undefined;
  let cleanup: (() => void) | undefined;
  try {
    const command = parseCli(argv);
    if (command.help) {
      process.stdout.write(USAGE);
      return ExitCode.OK;
    }
    // The first stop signal drains the run: no call is started after it, the calls in flight are
    // answered and their answers kept (the store, the cache), the batches they complete are written
    // and checkpointed, and the run stops: the resume pays for nothing twice. Calls still going on
    // STOP_GRACE_MS later (a platform that hangs, retries after timeouts), or when a second SIGINT
    // comes (Ctrl-C pressed again), are cut: their answers may be bought again. Other repeats are
    // only said.
    const stop = new AbortController();
    const cut = new AbortController();
    let grace: NodeJS.Timeout | undefined;
    release = onStopSignals((signal) => {
      if (!stop.signal.aborted) {
        process.stderr.write(
          command.options.dryRun
            ? `dq-csv: ${signal}: stopping the dry run\n`
            : `dq-csv: ${signal}: stopping once the calls in flight are answered (at most ${STOP_GRACE_MS / 1000} s); rerun with --resume\n`,
        );
        const reason = new Error(`interrupted by ${signal}`);
        stop.abort(reason);
        grace = setTimeout(() => {
          // Said like the second SIGINT's cut: these answers may be bought again (README "Signals").
          process.stderr.write(
            `dq-csv: ${STOP_GRACE_MS / 1000} s after ${signal}: cutting the calls still in flight (their answers may be bought again by the resume); rerun with --resume\n`,
          );
          cut.abort(reason);
        }, STOP_GRACE_MS);
      } else if (signal === 'SIGINT' && !cut.signal.aborted) {
        process.stderr.write('dq-csv: second SIGINT: cutting the calls in flight now (their answers may be bought again by the resume); rerun with --resume\n');
        cut.abort(stop.signal.reason);
      } else {
        process.stderr.write(`dq-csv: ${signal} again: already stopping once the calls in flight are answered (a second SIGINT cuts them)\n`);
      }
    });
    cleanup = () => clearTimeout(grace);
    if (command.options.report) await checkReportFolder(command.options.report);
    const progress = createProgress();
    const logger = createLogger({ level: 'warn' });
    if (command.options.apiKey) logger.redactor.add(command.options.apiKey);
    const summary = await processFile({
      ...command.options,
      progress,
      logger,
      stop: stop.signal,
      signal: cut.signal,
      onHint: (text) => process.stderr.write(logger.redactor.redact(`dq-csv: hint: ${text}\n`)),
    });
    progress.done();
    if (process.stderr.isTTY) process.stderr.write(summaryTable(summary));
    if (summary.error) process.stderr.write(logger.redactor.redact(`dq-csv: ${summary.error.code}: ${summary.error.message}\n`));
    const failed = failedRecordsLine(summary, command.options.maxFailed ?? 0);
    if (failed) process.stderr.write(failed);
    const printed = summaryObject(summary);
    process.stdout.write(logger.redactor.redact(JSON.stringify(printed)) + '\n');
    if (command.options.report && summary.plan === undefined) {
      try {
        await writeCsvReport(command.options.report, summary, (t) => logger.redactor.redact(t), printed);
        process.stderr.write(`dq-csv: report written to ${command.options.report}\n`);
      } catch (err) {
        process.stderr.write(
          `dq-csv: report-unwritable: ${err instanceof WholeFileError ? err.message : `cannot write the report ${command.options.report}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`}; the run itself is complete as summarised\n`,
        );
        return summary.exitCode === ExitCode.OK ? ExitCode.USAGE : summary.exitCode;
      }
    }
    return summary.exitCode;
  } catch (err) {
    const failure = cliFailure('dq-csv', err, commandLineRedactor(argv));
    process.stderr.write(failure.text);
    return failure.exitCode;
  } finally {
    // From here core's exitWhenDone handles the signals (the command's own exit code stands).
    release?.();
    cleanup?.();
  }
}

/** A report in a folder that does not exist, or cannot be written, is refused before the run pays for anything. */
async function checkReportFolder(path: string): Promise<void> {
  // The folder the file system writes it in: `link/../report.html` is next to the link's target.
  const folder = dirname(await physicalPath(path, 'the report'));
  const found = await stat(folder).catch(() => undefined);
  if (!found) throw usageError('--report', `the folder ${folder} does not exist; create it or write the report elsewhere`);
  if (!found.isDirectory()) throw usageError('--report', `${folder} is a file, not a folder; write the report elsewhere`);
  await access(folder, constants.W_OK).catch((err: unknown) => {
    throw usageError('--report', `the folder ${folder} cannot be written (${(err as NodeJS.ErrnoException).code}); write the report elsewhere`);
  });
}
