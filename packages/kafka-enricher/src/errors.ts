import { ExitCode } from '@dq/core';
import { defineErrorCodes } from '@dq/core/errors';

/**
 * Stable codes of errors raised by dq-kafka itself, with the exit code each leads to. Platform
 * errors keep @dq/core's codes. Branch on `code`, never on the message.
 */
const KafkaErrorBase = defineErrorCodes('dq-kafka', {
  /** a flag or environment variable is missing or has a bad value */
  usage: { exit: ExitCode.USAGE },
  /** records came back `unavailable` (5xx, timeouts, 429 after core's retries): retried, never dead-lettered */
  unavailable: { exit: ExitCode.TEMPFAIL },
  /** the transient-failure budget (`--retry-max-ms`) of one partition's batch is used up */
  'retry-budget-exhausted': { exit: ExitCode.TEMPFAIL },
  /** the Kafka client failed for good (broker unreachable, send or commit refused after its retries) */
  'kafka-failure': { exit: ExitCode.TEMPFAIL },
  /** the metrics server could not listen on --metrics-port */
  'metrics-listen-failed': { exit: ExitCode.USAGE },
});

/** The exit code of each {@link KafkaEnricherError} code. */
export const KAFKA_ERROR_EXIT_CODES = KafkaErrorBase.codes;

/** Code of a {@link KafkaEnricherError}. */
export type KafkaErrorCode = keyof typeof KAFKA_ERROR_EXIT_CODES;

/** An error of dq-kafka. `exitCode` is what the CLI exits with when it ends the run. */
export class KafkaEnricherError extends KafkaErrorBase {
  override name = 'KafkaEnricherError';
  /** Input topic, partition and offset the failure concerns, when it concerns one. */
  readonly topic: string | undefined;
  readonly partition: number | undefined;
  readonly offset: string | undefined;

  constructor(
    code: KafkaErrorCode,
    message: string,
    fields: { retriable?: boolean; cause?: unknown; requestId?: string; topic?: string; partition?: number; offset?: string } = {},
  ) {
    super(code, message, { retriable: fields.retriable ?? false, cause: fields.cause, requestId: fields.requestId });
    this.topic = fields.topic;
    this.partition = fields.partition;
    this.offset = fields.offset;
  }
}

/** A usage error naming the flag (and its DQ_KAFKA_* variable) at fault; exit code 2. */
export function usageError(flag: string, problem: string): KafkaEnricherError {
  return KafkaEnricherError.usage(flag, problem);
}
