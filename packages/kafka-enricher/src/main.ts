import { createLogger, ExitCode } from '@dq/core';
import { cliFailure, exitProcess, onStopSignals } from '@dq/core/cli';
import type { StopSignal } from '@dq/core/cli';
import { commandLineRedactor, parseCli, USAGE } from './cli-args.js';
import { createEnricher } from './enricher.js';
import { Metrics } from './metrics.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from './options.js';
import { startMetricsServer } from './metrics-server.js';
import type { MetricsServer } from './metrics-server.js';

/** Extra time after the drain timeout for leaving the group and closing clients, in ms. */
const SHUTDOWN_GRACE_MS = 15_000;

/**
 * Runs `dq-kafka` with `argv` (without node and script) and returns the exit code. JSON log lines
 * go to stderr; one JSON summary line goes to stdout when the run ends.
 */
export async function main(argv: readonly string[]): Promise<number> {
  let command;
  try {
    command = parseCli(argv);
  } catch (err) {
    const failure = cliFailure('dq-kafka', err, commandLineRedactor(argv));
    process.stderr.write(failure.text);
    return failure.exitCode;
  }
  if (command.help) {
    process.stdout.write(USAGE);
    return ExitCode.OK;
  }
  const logger = createLogger({ level: command.logLevel, bindings: { app: 'dq-kafka' } });
  for (const warning of command.warnings) logger.warn(warning);
  const metrics = new Metrics();
  // A hint is for the operator reading the terminal or the job log: a line of its own, like dq-pg's.
  const onHint = (text: string): void => void process.stderr.write(logger.redactor.redact(`dq-kafka: hint: ${text}\n`));
  const enricher = createEnricher({ ...command.options, logger, metrics, onHint });
  let server: MetricsServer | undefined;
  let hardBound: NodeJS.Timeout | undefined;
  let stopping = false;
  // Every stop signal (SIGINT, SIGTERM, SIGHUP: core's onStopSignals) is handled for the whole run:
  // with a one-time handler a repeated SIGTERM (a supervisor that signals again, a script's own
  // timeout) would kill the process mid-drain, with no summary and no documented exit code. A
  // repeated SIGTERM or SIGHUP leaves the drain to finish; a second
  // SIGINT, an operator pressing Ctrl-C again, ends it at once (exit 75, unfinished work uncommitted).
  const onSignal = (signal: StopSignal): void => {
    if (stopping) {
      const now = signal === 'SIGINT';
      logger.warn(
        now
          ? 'second SIGINT: ending the drain now; unfinished work is handed back uncommitted'
          : 'signal received again: the drain is under way and ends with the summary line; a second SIGINT ends it at once',
        { signal },
      );
      if (now) enricher.stop({ now: true });
      return;
    }
    stopping = true;
    logger.info('signal received: stopping fetches, finishing the calls under way, committing, leaving the group', { signal });
    enricher.stop();
    // Bounded shutdown: whatever is uncommitted by then is re-read by the group (at least once).
    // The work is not done, so a scheduler must not see success: 75, retry later. Not unref'd: with
    // nothing else left to wait for (a shutdown stuck on a promise that never settles), Node would
    // otherwise end the process with its own exit code 13 and no summary; cleared when main returns.
    hardBound ??= setTimeout(
      () => {
        logger.error('shutdown took too long; exiting, uncommitted messages will be re-read', { signal });
        process.stderr.write('dq-kafka: drain-timeout: the shutdown did not finish in time; uncommitted messages are re-read on the next start\n');
        exitProcess(ExitCode.TEMPFAIL);
      },
      (command.options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS) + SHUTDOWN_GRACE_MS,
    );
  };
  const release = onStopSignals(onSignal);
  try {
    if (command.metricsPort !== undefined) {
      server = await startMetricsServer(metrics, () => enricher.healthy(), command.metricsPort, undefined, command.metricsPortSetting);
      logger.info('metrics listening', { port: server.port, paths: ['/metrics', '/healthz'] });
    }
    const outcome = await enricher.run();
    if (outcome.error) process.stderr.write(`dq-kafka: ${outcome.error.code}: ${outcome.error.message}\n`);
    const { report } = outcome;
    process.stdout.write(
      `${JSON.stringify({
        exitCode: outcome.exitCode,
        reason: outcome.reason,
        error: outcome.error,
        records: report.records,
        byStatus: report.byStatus,
        byClass: report.byClass,
        apiCalls: report.apiCalls,
        retries: report.retries,
        ...(report.budget ? { budget: report.budget } : {}),
      })}\n`,
    );
    return outcome.exitCode;
  } catch (err) {
    const failure = cliFailure('dq-kafka', err, (t) => logger.redactor.redact(t));
    process.stderr.write(failure.text);
    return failure.exitCode;
  } finally {
    clearTimeout(hardBound);
    // The metrics server closes while the signal handlers are still there: a signal meanwhile
    // (the consumer is already stopped) must not kill the process before it exits with its code.
    await server?.close();
    release();
  }
}
