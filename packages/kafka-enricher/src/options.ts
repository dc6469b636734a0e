import { usageError } from './errors.js';
import type { ConnectionOptions } from 'node:tls';
import type { EngineConfig, Logger, Mode } from '@dq/core';
import type { EngineFlagSettings } from '@dq/core/cli';
import type { FieldMap } from './field-map.js';
import type { Metrics } from './metrics.js';

/** SASL credentials for a real cluster; the password is never logged. */
export interface SaslOptions {
  mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
  username: string;
  password: string;
}

/** Options of {@link createEnricher}: the CLI's flags, as a library call. */
export interface EnricherOptions {
  /** Bootstrap servers, `host:port` each. */
  brokers: string[];
  /** Consumer group id; instances with the same id share the input partitions. */
  groupId: string;
  inputTopic: string;
  outputTopic: string;
  dlqTopic: string;
  /** Request fields and the JSON pointers they are read from. */
  map: FieldMap;
  /** What each message is checked against; default `address`. */
  mode?: Mode;
  /** Country for address records without one. */
  country?: string;
  /** Address include options (`coordinates-wgs84`, ...). */
  include?: string[];
  /** Address API host. */
  baseUrl: string;
  /** Real-time services host (company modes); default `baseUrl`. */
  realtimeUrl?: string;
  /** API key; never logged. */
  apiKey: string;
  /** Kafka client id; default `dq-kafka`. */
  clientId?: string;
  /** Messages taken from Kafka but not yet committed, across partitions; default 5000. Past it, partitions pause. */
  maxInFlight?: number;
  /** Messages per engine call and per commit, per partition; default 500. */
  batchSize?: number;
  /** Where a group without committed offsets starts: true = earliest (default), false = latest. */
  fromBeginning?: boolean;
  /**
   * Idempotent producer; default false. Off, a send kafkajs repeats after a lost acknowledgement can
   * write its messages twice (at least once allows that), and order is kept all the same: every send
   * waits for all in-sync replicas (acks -1) and each partition has one send in flight at a time.
   * On, kafkajs's idempotent producer (which it calls experimental) is used; it needs a broker that
   * reports a controller and is not covered by this package's tests.
   */
  idempotent?: boolean;
  /**
   * Whether missing output and DLQ topics are created at start by the brokers' automatic topic
   * creation; default false: a missing one stops the run at start (`topic-missing`, exit 2). A
   * missing input topic always does.
   */
  createTopics?: boolean;
  /**
   * Total time one partition's batch may keep failing transiently before the run ends with exit 75,
   * in ms, from its first attempt; a repeat is cancelled when it runs out. Default 600 000.
   */
  retryMaxMs?: number;
  /** First wait before repeating a batch with unavailable records, in ms; default 1000 (doubles, jittered, up to 30 000). */
  retryBaseDelayMs?: number;
  /** How long a shutdown may spend finishing in-flight work before handing the rest back, in ms; default 20 000. */
  drainTimeoutMs?: number;
  /** Consumer group session timeout in ms; default 30 000 (≥ 6000 for the mock cluster). */
  sessionTimeoutMs?: number;
  /** Member added to the output value; default `dq`. */
  dqField?: string;
  /**
   * The largest send the brokers accept for one partition (their `message.max.bytes`, a topic's
   * `max.message.bytes`), bytes; default 1 000 000 (Kafka's default is 1 048 588). Sends are split
   * to stay within it, and a message that alone exceeds it is dead-lettered (`too-large`).
   */
  maxMessageBytes?: number;
  /** TLS: true for the system CAs, or Node TLS options (ca, cert, key, rejectUnauthorized). */
  ssl?: boolean | ConnectionOptions;
  sasl?: SaslOptions;
  /** Engine settings passed through (threads, concurrency, rate limits, retry, timeout). */
  engine?: Partial<
    Pick<EngineConfig, 'threads' | 'concurrency' | 'rateLimits' | 'retry' | 'timeoutMs' | 'addressEndpoint' | 'company' | 'budget' | 'account' | 'maxCalls'>
  > &
    Pick<EngineFlagSettings, 'store' | 'maxAgeMs'>;
  /** JSON-lines logger (default: core's, level info, on stderr). */
  logger?: Logger;
  /** Metrics to count into (default: a new set, see `Enricher.metrics`). */
  metrics?: Metrics;
  /** Told once when the first messages could not be read with `map` (default: a warning in the log). */
  onHint?: (text: string) => void;
}

/** Default {@link EnricherOptions.maxMessageBytes}: under Kafka's default message.max.bytes (1 048 588). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_000_000;

/** Default {@link EnricherOptions.drainTimeoutMs}; the CLI's hard bound on a shutdown counts from it too. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 20_000;

/** {@link EnricherOptions} with defaults filled in. */
export type ResolvedEnricherOptions = Required<
  Omit<EnricherOptions, 'country' | 'include' | 'realtimeUrl' | 'ssl' | 'sasl' | 'engine' | 'logger' | 'metrics' | 'onHint'>
> &
  Pick<EnricherOptions, 'country' | 'include' | 'realtimeUrl' | 'ssl' | 'sasl' | 'engine'>;

/** Throws a usage error when `dqField` is the member a pointer of `map` starts at. */
export function checkDqField(map: FieldMap, dqField: string): void {
  const clash = map.find((m) => m.pointer.tokens[0] === dqField);
  if (clash === undefined) return;
  throw usageError(
    '--dq-field',
    `"${dqField}" is the member --map reads ${clash.field} from (${clash.pointer.text}); the output would hold the platform's answer instead of the input there: choose another name`,
  );
}

/**
 * Fills defaults. Refuses a `dqField` that is the member a mapped pointer starts at: the enriched
 * value replaces a member of that name, so the output would hold the answer where the input was.
 */
export function resolveEnricherOptions(o: EnricherOptions): ResolvedEnricherOptions {
  const dqField = o.dqField ?? 'dq';
  checkDqField(o.map, dqField);
  return {
    ...o,
    mode: o.mode ?? 'address',
    clientId: o.clientId ?? 'dq-kafka',
    maxInFlight: o.maxInFlight ?? 5000,
    batchSize: Math.min(o.batchSize ?? 500, o.maxInFlight ?? 5000),
    fromBeginning: o.fromBeginning ?? true,
    idempotent: o.idempotent ?? false,
    createTopics: o.createTopics ?? false,
    retryMaxMs: o.retryMaxMs ?? 600_000,
    retryBaseDelayMs: o.retryBaseDelayMs ?? 1000,
    drainTimeoutMs: o.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS,
    sessionTimeoutMs: o.sessionTimeoutMs ?? 30_000,
    dqField,
    maxMessageBytes: o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
  };
}
