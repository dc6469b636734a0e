import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSSASLAuthenticationError } from 'kafkajs';
import { exitCodeFor } from '@dq/core';
import { refusedByGroup } from '../src/enricher.js';
import { sendFailure } from '../src/partition-pipeline.js';

// The errors a consumer crash carries are built here by kafkajs's own consumer code (its runner,
// its consumer group, its retrier), as the CRASH event hands them to dq-kafka, with a group
// coordinator that gives the answers under test: the mock cluster cannot be made to refuse a rejoin
// until kafkajs's retries run out.
const require = createRequire(import.meta.url);
type Coordinator = { joinGroup(): Promise<never> };
type Group = { joinAndSync(): Promise<void> };
const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as new (options: Record<string, unknown>) => Group;
const Runner = require('kafkajs/src/consumer/runner.js') as new (options: Record<string, unknown>) => {
  running: boolean;
  fetchManager: { start(): Promise<void>; stop(): Promise<void> };
  start(): Promise<void>;
  scheduleFetchManager(): void;
};
const { createLogger, LEVELS } = require('kafkajs/src/loggers/index.js') as {
  createLogger(o: { level: number; logCreator: () => () => void }): unknown;
  LEVELS: { NOTHING: number };
};
const { createErrorFromCode } = require('kafkajs/src/protocol/error.js') as { createErrorFromCode(code: number): Error };

/** Kafka's error codes of the answers under test. */
const CODE = {
  NOT_COORDINATOR_FOR_GROUP: 16,
  ILLEGAL_GENERATION: 22,
  UNKNOWN_MEMBER_ID: 25,
  REBALANCE_IN_PROGRESS: 27,
  GROUP_AUTHORIZATION_FAILED: 30,
  INVALID_REQUEST: 42,
  FENCED_INSTANCE_ID: 82,
} as const;
const settings = { ssl: undefined, sasl: undefined };
// Fewer and shorter retries than dq-kafka's (kafkajs's defaults): the errors are built alike.
const retry = { retries: 2, initialRetryTime: 1, maxRetryTime: 5 };

/** A kafkajs consumer runner whose group coordinator refuses every JoinGroup with `refusal`. */
function runner(refusal: () => Error, onCrash: (e: Error) => void): InstanceType<typeof Runner> {
  const coordinator: Coordinator = { joinGroup: () => Promise.reject(refusal()) };
  const logger = createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined });
  const cluster = {
    connect: () => Promise.resolve(),
    refreshMetadataIfNecessary: () => Promise.resolve(),
    findGroupCoordinator: () => Promise.resolve(coordinator),
    getNodeIds: () => [],
  };
  const instrumentationEmitter = { emit: () => undefined };
  const consumerGroup = new ConsumerGroup({
    cluster,
    groupId: 'g',
    topics: ['in'],
    topicConfigurations: {},
    logger,
    instrumentationEmitter,
    retry,
    assigners: [],
  });
  return new Runner({ logger, consumerGroup, instrumentationEmitter, retry, onCrash, concurrency: 1, eachBatch: () => Promise.resolve() });
}

/** The error a consumer whose (re)join the coordinator refuses with `refusal` crashes with. */
function crashOnJoin(refusal: () => Error): Promise<Error> {
  return new Promise((resolve) => void runner(refusal, resolve).start());
}

/**
 * The error a running consumer crashes with when its fetch fails with `failure`: kafkajs rejoins
 * after a rebalance (refused with `refusal`), or retries the fetch.
 */
function crashWhileFetching(failure: () => Error, refusal: () => Error = failure): Promise<Error> {
  return new Promise((resolve) => {
    const r = runner(refusal, resolve);
    r.running = true;
    r.fetchManager = { start: () => Promise.reject(failure()), stop: () => Promise.resolve() };
    r.scheduleFetchManager();
  });
}

const answer = (type: keyof typeof CODE) => (): Error => createErrorFromCode(CODE[type]);

describe('a consumer crash during a stop is the group refusing the member', () => {
  it('when its rejoin is refused until kafkajs runs out of retries (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID)', async () => {
    for (const type of ['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID'] as const) {
      const crash = await crashOnJoin(answer(type));
      // What kafkajs hands over: its retrier's error, around a KafkaJSError that kept only the answer's message.
      expect(crash.name).toBe('KafkaJSNumberOfRetriesExceeded');
      expect(refusedByGroup(crash, settings), `${type}: ${crash.name}`).toBe(true);
    }
  });

  it('when the rejoin after a rebalance seen while fetching is refused until kafkajs runs out of retries (wrapped twice)', async () => {
    const crash = await crashWhileFetching(answer('REBALANCE_IN_PROGRESS'));
    expect(crash.name).toBe('KafkaJSNonRetriableError');
    expect(refusedByGroup(crash, settings)).toBe(true);
    const unknown = await crashWhileFetching(answer('UNKNOWN_MEMBER_ID'), answer('ILLEGAL_GENERATION'));
    expect(refusedByGroup(unknown, settings)).toBe(true);
  });

  it('when its rejoin is refused outright (FENCED_INSTANCE_ID, the mock cluster’s INVALID_REQUEST)', async () => {
    for (const type of ['FENCED_INSTANCE_ID', 'INVALID_REQUEST'] as const) {
      expect(refusedByGroup(await crashOnJoin(answer(type)), settings), type).toBe(true);
      expect(refusedByGroup(await crashWhileFetching(answer('REBALANCE_IN_PROGRESS'), answer(type)), settings), type).toBe(true);
    }
  });
});

describe('a consumer crash during a stop stays a Kafka failure (exit 75) through the same wrappers', () => {
  it('for brokers out of reach', async () => {
    const unreachable = (): Error => new KafkaJSConnectionError('connect ECONNREFUSED 127.0.0.1:9092', { broker: '127.0.0.1:9092', code: 'ECONNREFUSED' });
    const crash = await crashWhileFetching(unreachable);
    expect(crash.name).toBe('KafkaJSNumberOfRetriesExceeded');
    expect(refusedByGroup(crash, settings)).toBe(false);
    expect(refusedByGroup(await crashOnJoin(unreachable), settings)).toBe(false);
  });

  it('for a group coordinator that is not available (NOT_COORDINATOR_FOR_GROUP, retried by kafkajs as a rejoin is)', async () => {
    const crash = await crashOnJoin(answer('NOT_COORDINATOR_FOR_GROUP'));
    expect(crash.name).toBe('KafkaJSNumberOfRetriesExceeded');
    expect(refusedByGroup(crash, settings)).toBe(false);
    expect(refusedByGroup(await crashWhileFetching(answer('REBALANCE_IN_PROGRESS'), answer('NOT_COORDINATOR_FOR_GROUP')), settings)).toBe(false);
  });

  it('for authorization failures', async () => {
    expect(refusedByGroup(await crashOnJoin(answer('GROUP_AUTHORIZATION_FAILED')), settings)).toBe(false);
    expect(refusedByGroup(await crashWhileFetching(answer('GROUP_AUTHORIZATION_FAILED')), settings)).toBe(false);
    // kafkajs's types give this error no constructor arguments; kafkajs passes it the broker's message.
    const sasl = (): Error =>
      new (KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error)('SASL PLAIN authentication failed: Authentication failed');
    expect(refusedByGroup(await crashWhileFetching(sasl), { ssl: undefined, sasl: { mechanism: 'plain', username: 'u', password: 'p' } })).toBe(false);
  });

  it('for results kafkajs could not send within its retries', () => {
    const unsent = new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('Connection timeout'), { retryCount: 5, retryTime: 1000 });
    const failure = sendFailure(unsent, 'partition 0 offsets 0..9', 1_000_000, { topic: 'in', partition: 0, offset: '0' });
    expect(exitCodeFor(failure)).toBe(75);
    expect(refusedByGroup(failure, settings)).toBe(false);
  });
});
