import { defineErrorCodes, ExitCode } from '@dq/core/errors';
import type { CodedErrorFields } from '@dq/core/errors';

/**
 * Codes of errors raised by dq-kafka itself, with the exit code each leads to (platform errors
 * keep @dq/core's codes). None is retriable by the engine: dq-kafka retries them itself.
 */
const KafkaErrorBase = defineErrorCodes('dq-kafka', {
  /** a flag or environment variable is missing or has a bad value */
  usage: { exit: ExitCode.USAGE },
  /** records came back `unavailable` (5xx, timeouts, 429 after core's retries): retried, never dead-lettered */
  unavailable: { exit: ExitCode.TEMPFAIL, retriable: false },
  /** the transient-failure budget (`--retry-max-ms`) of one partition's batch is used up */
  'retry-budget-exhausted': { exit: ExitCode.TEMPFAIL, retriable: false },
  /** the Kafka client failed for good (broker unreachable, send or commit refused after its retries) */
  'kafka-failure': { exit: ExitCode.TEMPFAIL, retriable: false },
  /** a TLS handshake failed on the settings (untrusted certificate, wrong host name, no TLS on the port): fix --ssl* or --brokers */
  'kafka-tls': { exit: ExitCode.USAGE },
  /** the brokers refused the SASL login, or offer no SASL: fix the --sasl-* settings or --brokers */
  'kafka-sasl': { exit: ExitCode.USAGE },
  /** the brokers refused a send as too large: --max-message-bytes is above a topic's max.message.bytes */
  'message-too-large': { exit: ExitCode.USAGE },
  /** the brokers refused a send for its timestamps (the input's, README "Timestamps"): an output or DLQ topic limits how old or new a timestamp may be */
  'message-timestamp-refused': { exit: ExitCode.USAGE },
  /** --input, --output or --dlq names a topic the brokers do not have (README, dq-kafka "Topics") */
  'topic-missing': { exit: ExitCode.USAGE },
  /** --group is in use by consumers that read other topics: the group's leader assigns only those (README "One group, one set of settings") */
  'group-in-use': { exit: ExitCode.USAGE },
  /** the metrics server could not listen on --metrics-port */
  'metrics-listen-failed': { exit: ExitCode.USAGE },
});

/** An error of dq-kafka: its stable `code` (branch on it, never on the message) and the `exitCode` the CLI exits with. */
export class KafkaEnricherError extends KafkaErrorBase {
  override readonly name = 'KafkaEnricherError';
  /** Input topic, partition and offset the failure concerns, when it concerns one. */
  readonly topic: string | undefined;
  readonly partition: number | undefined;
  readonly offset: string | undefined;

  constructor(
    code: keyof typeof KafkaErrorBase.codes,
    message: string,
    { topic, partition, offset, ...fields }: CodedErrorFields & { topic?: string; partition?: number; offset?: string } = {},
  ) {
    super(code, message, fields);
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
  }
}

/** A usage error naming the flag (and its DQ_KAFKA_* variable) at fault; exit code 2. */
export const usageError = (flag: string, problem: string): KafkaEnricherError => KafkaEnricherError.usage(flag, problem);
