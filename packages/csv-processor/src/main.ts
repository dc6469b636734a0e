import { cliFailure, createLogger, ExitCode } from '@dq/core';
import { parseCli, USAGE } from './cli-args.js';
import { createProgress } from './progress.js';
import { processFile } from './run.js';
import { summaryJson, summaryTable } from './summary.js';

/**
 * Runs `dq-csv` with `argv` (without node and script) and returns the exit code. Progress, logs
 * and the table go to stderr; the JSON summary line goes to stdout.
 */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    const command = parseCli(argv);
    if (command.help) {
      process.stdout.write(USAGE);
      return ExitCode.OK;
    }
    const controller = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => {
      process.stderr.write(`dq-csv: ${signal}: stopping after the batch in flight; rerun with --resume\n`);
      controller.abort(new Error(`interrupted by ${signal}`));
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const progress = createProgress();
    const logger = createLogger({ level: 'warn' });
    if (command.options.apiKey) logger.redactor.add(command.options.apiKey);
    const summary = await processFile({ ...command.options, progress, logger, signal: controller.signal });
    progress.done();
    if (process.stderr.isTTY) process.stderr.write(summaryTable(summary));
    if (summary.error) process.stderr.write(logger.redactor.redact(`dq-csv: ${summary.error.code}: ${summary.error.message}\n`));
    process.stdout.write(logger.redactor.redact(summaryJson(summary)) + '\n');
    return summary.exitCode;
  } catch (err) {
    const failure = cliFailure('dq-csv', err);
    process.stderr.write(failure.text);
    return failure.exitCode;
  }
}
