import { isRetriable, RetriesExhaustedError } from '@dq/core';
import { retry } from '@dq/core/transport';
import type { Engine, Logger, RecordResult } from '@dq/core';
import type { KafkaMessage, Message, Producer, TopicMessages } from 'kafkajs';
import { KafkaEnricherError } from './errors.js';
import { causes } from './kafka-settings.js';
import type { FieldMap } from './field-map.js';
import type { CallWindow, FlowControl } from './flow-control.js';
import type { MapCheck } from './map-check.js';
import { decodeMessage, dlqMessage, enrichedMessage, invalidInputReason, tombstoneMessage } from './message-codec.js';
import type { Decoded, DlqReason, SourcePosition } from './message-codec.js';
import { METRIC } from './metrics.js';
import type { Metrics } from './metrics.js';
import { messageBytes, splitSends, tooLarge } from './message-size.js';
import { tagInputPartition } from './output-partitioner.js';

/** What a pipeline needs from the enricher. */
export interface PipelineContext {
  engine: Engine;
  producer: Producer;
  flow: FlowControl;
  /** Admits records to the engine, over all partitions; closed by a graceful stop. */
  calls: CallWindow;
  metrics: Metrics;
  logger: Logger;
  map: FieldMap;
  outputTopic: string;
  dlqTopic: string;
  dqField: string;
  /** Told about every delivered chunk's decoded messages (a --map that reads nothing). */
  mapCheck: MapCheck;
  /** The largest send (a partition's record batch) the brokers accept, bytes (README "Message size"). */
  maxMessageBytes: number;
  retryMaxMs: number;
  retryBaseDelayMs: number;
  /** Commits `offset` (the next one to read) of the partition; failures are logged, not thrown. */
  commit(topic: string, partition: number, offset: string): Promise<void>;
  /** A failure that ends the run (run stop, retry budget used up, Kafka refused a send). */
  onFatal(error: unknown): void;
}

/**
 * Chunks of one partition whose engine calls run at once: while the first is sent and committed,
 * the next are being answered, so the HTTP calls never wait for Kafka round trips and a chunk's
 * slowest calls overlap the next chunk's. Delivery and commits stay in offset order.
 */
export const LOOKAHEAD_CHUNKS = 3;

interface Chunk {
  messages: KafkaMessage[];
  highWatermark: string;
  /** Decoded messages and the engine's answers; started at most {@link LOOKAHEAD_CHUNKS} ahead. */
  answered?: Promise<Answered>;
}

interface Answered {
  decoded: Decoded[];
  /**
   * Results of the decoded records, in order (rejects have none). During a graceful stop only those
   * of the records whose calls had started: fewer, and some may be `unavailable`.
   */
  results: RecordResult[];
}

type DecodedRecord = Extract<Decoded, { kind: 'record' }>;

/**
 * The ordered work of one input partition: chunks of messages go through the engine (up to
 * {@link LOOKAHEAD_CHUNKS} at once), their enriched and dead-letter messages are sent chunk after
 * chunk, and only after Kafka acknowledged a chunk is its last offset + 1 committed. Records that
 * come back `unavailable` pause the partition and the chunk is repeated through core's retrier until
 * it is answered (never dead-lettered).
 */
export class PartitionPipeline {
  readonly topic: string;
  readonly partition: number;
  readonly #ctx: PipelineContext;
  readonly #queue: Chunk[] = [];
  readonly #abort = new AbortController();
  /** Aborted by {@link drain}: retry waits end, and no engine work starts. */
  readonly #drain = new AbortController();
  /** Settles once the slices of the last chunk sent to {@link #process} are all in the call window (or it gave up). */
  #admissions: Promise<void> = Promise.resolve();
  readonly #previous: Promise<void>;
  /** Set once the previous pipeline of the partition settled: engine calls may start. */
  #ready = false;
  #running: Promise<void> | undefined;
  #idleWaiters: Array<() => void> = [];
  /** Offset after the last message taken in; redeliveries below it are ignored. */
  #nextOffset: bigint | undefined;
  /** Chunks in a retry wait; the partition is paused for `retry` while any is. */
  #retrying = 0;
  /** The next offset to commit: after the last delivered chunk, else the first message taken in. */
  #toCommit: bigint | undefined;
  /** The highest high watermark a fetch of this partition reported. */
  #highWatermark: bigint | undefined;

  constructor(topic: string, partition: number, ctx: PipelineContext, previous: Promise<void> = Promise.resolve()) {
    this.topic = topic;
    this.partition = partition;
    this.#ctx = ctx;
    this.#previous = previous;
  }

  /** Messages not yet taken in (offset at or after the last one taken). */
  fresh(messages: KafkaMessage[]): KafkaMessage[] {
    const next = this.#nextOffset;
    if (next === undefined || messages.length === 0 || BigInt(messages[0]!.offset) >= next) return messages;
    return messages.filter((m) => BigInt(m.offset) >= next);
  }

  /** Queues messages (already counted in the in-flight budget) in chunks of `batchSize`. */
  enqueue(messages: KafkaMessage[], highWatermark: string, batchSize: number): void {
    if (this.#abort.signal.aborted || messages.length === 0) {
      this.#ctx.flow.release(messages.length);
      return;
    }
    for (let i = 0; i < messages.length; i += batchSize) this.#queue.push({ messages: messages.slice(i, i + batchSize), highWatermark });
    this.#nextOffset = BigInt(messages[messages.length - 1]!.offset) + 1n;
    // The lag as fetched, also while nothing can be delivered (the platform down): the gauge must
    // show a group falling behind exactly then, not the figure of its last delivery.
    this.#toCommit ??= BigInt(messages[0]!.offset);
    this.#showLag(BigInt(highWatermark));
    this.#startAhead();
    this.#running ??= this.#loop().finally(() => {
      this.#running = undefined;
      for (const wake of this.#idleWaiters.splice(0)) wake();
    });
  }

  /** Resolves when nothing is queued or running. */
  idle(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Hands queued work back to Kafka (it is re-read from the last committed offset by whoever owns the
   * partition next) and aborts pending engine calls and retry waits. A chunk whose send has started
   * still completes and is committed. Resolves when the pipeline is idle.
   */
  cancel(): Promise<void> {
    this.#abort.abort();
    const dropped = this.#queue.splice(this.#running ? 1 : 0);
    this.#ctx.flow.release(dropped.reduce((n, c) => n + c.messages.length, 0));
    return this.idle();
  }

  /**
   * Graceful stop: finishes only the work already under way. Queued chunks whose engine work has not
   * started are handed back at once; a started chunk is delivered up to its first message whose
   * call had not started when the call window closed (or came back unavailable), and committed up
   * to there; the rest of it and every later chunk are handed back uncommitted, for whoever reads
   * the partition next (answers already paid for are in the result store). Chunks in a retry wait
   * are handed back without waiting. Resolves when the pipeline is idle.
   */
  drain(): Promise<void> {
    this.#drain.abort();
    const unstarted = this.#queue.findIndex((c) => c.answered === undefined);
    if (unstarted >= 0) {
      // The loop holds the first chunk; it hands that back itself.
      const dropped = this.#queue.splice(Math.max(unstarted, this.#running ? 1 : 0));
      this.#ctx.flow.release(dropped.reduce((n, c) => n + c.messages.length, 0));
    }
    return this.idle();
  }

  async #loop(): Promise<void> {
    await this.#previous;
    this.#ready = true;
    while (this.#queue.length > 0) {
      this.#startAhead();
      const chunk = this.#queue[0]!;
      let complete = false;
      try {
        // A chunk not started when a drain began is handed back.
        if (!this.#abort.signal.aborted && chunk.answered !== undefined) {
          // Not past a cancel: a call its HTTP client leaves pending, deaf to the abort, must not hold
          // the shutdown (the process would end with no summary and Node's exit code 13).
          const answered = await untilAborted(chunk.answered, this.#abort.signal);
          if (!this.#abort.signal.aborted) complete = await this.#deliver(chunk, answered);
        }
      } catch (err) {
        if (!this.#abort.signal.aborted) this.#ctx.onFatal(err);
        this.#abort.abort();
      } finally {
        this.#queue.shift();
        this.#ctx.flow.release(chunk.messages.length);
      }
      // Past a chunk not delivered whole, nothing can be committed: the rest goes back too.
      if (this.#abort.signal.aborted || (this.#drain.signal.aborted && !complete)) {
        this.#ctx.flow.release(this.#queue.splice(0).reduce((n, c) => n + c.messages.length, 0));
      }
    }
  }

  /** Starts the engine work of the first {@link LOOKAHEAD_CHUNKS} queued chunks not yet started. */
  #startAhead(): void {
    if (!this.#ready || this.#abort.signal.aborted || this.#drain.signal.aborted) return;
    const end = Math.min(LOOKAHEAD_CHUNKS, this.#queue.length);
    for (let i = 0; i < end; i++) {
      const chunk = this.#queue[i]!;
      if (chunk.answered) continue;
      chunk.answered = this.#answerChunk(chunk);
      // Awaited in order by the loop; a chunk dropped by cancel() rejects with the abort unobserved.
      chunk.answered.catch(() => undefined);
    }
  }

  async #answerChunk(chunk: Chunk): Promise<Answered> {
    const map = this.#ctx.map;
    const decoded = chunk.messages.map((m) => decodeMessage(m, map));
    const records: DecodedRecord['record'][] = [];
    for (const d of decoded) if (d.kind === 'record') records.push(d.record);
    const first = chunk.messages[0]!.offset;
    const last = chunk.messages[chunk.messages.length - 1]!.offset;
    const results = records.length === 0 ? [] : await this.#answer(records, first, last);
    return { decoded, results };
  }

  /**
   * Sends a chunk's output and dead letters and commits after them. During a drain, only up to its
   * first record without an answer (see {@link drain}); false when the chunk was not delivered whole.
   */
  async #deliver(chunk: Chunk, answered: Answered): Promise<boolean> {
    const ctx = this.#ctx;
    const limit = ctx.maxMessageBytes;
    const { decoded, results } = deliverable(answered);
    if (decoded.length === 0) return false;
    const complete = decoded.length === answered.decoded.length;
    const first = chunk.messages[0]!.offset;
    const last = decoded[decoded.length - 1]!.message.offset;
    const out: Message[] = [];
    const dlq: Message[] = [];
    const dlqReasons = new Map<string, number>();
    const deadLetter = (d: Decoded, source: SourcePosition, reason: DlqReason): void => {
      dlq.push(tagInputPartition(dlqMessage(d.message, source, reason, limit), this.partition));
      dlqReasons.set(reason.code, (dlqReasons.get(reason.code) ?? 0) + 1);
    };
    let r = 0;
    for (const d of decoded) {
      const source: SourcePosition = { topic: this.topic, partition: this.partition, offset: d.message.offset };
      if (d.kind === 'reject') {
        deadLetter(d, source, { code: d.code, message: `offset ${d.message.offset}: ${d.reason}` });
        continue;
      }
      if (d.kind === 'tombstone') {
        out.push(tagInputPartition(tombstoneMessage(d.message), this.partition));
        continue;
      }
      const result = results[r++]!;
      if (result.status === 'invalid-input') {
        deadLetter(d, source, invalidInputReason(result, d.message.offset));
        continue;
      }
      const enriched = enrichedMessage(d, result, source, ctx.dqField);
      // A message the brokers would refuse would stop the partition on every start: dead-lettered.
      if (tooLarge(enriched, limit)) deadLetter(d, source, tooLargeReason(enriched, source, limit, result));
      else out.push(tagInputPartition(enriched, this.partition));
    }
    ctx.mapCheck.observe(decoded);
    const topicMessages: TopicMessages[] = [];
    if (out.length > 0) topicMessages.push({ topic: ctx.outputTopic, messages: out });
    if (dlq.length > 0) topicMessages.push({ topic: ctx.dlqTopic, messages: dlq });
    try {
      // In order, each send within the brokers' limit on a partition's batch (usually one send).
      for (const send of splitSends(topicMessages, limit)) await ctx.producer.sendBatch({ topicMessages: send, acks: -1 });
    } catch (err) {
      throw sendFailure(err, this.#where(first, last), limit, { topic: this.topic, partition: this.partition, offset: first });
    }
    this.#count(out.length, dlqReasons, results);
    const next = (BigInt(last) + 1n).toString();
    await ctx.commit(this.topic, this.partition, next);
    this.#toCommit = BigInt(next);
    this.#showLag(BigInt(chunk.highWatermark));
    return complete;
  }

  /** Sets the lag gauge: the highest high watermark seen minus the next offset to commit. */
  #showLag(highWatermark: bigint): void {
    if (this.#highWatermark === undefined || highWatermark > this.#highWatermark) this.#highWatermark = highWatermark;
    if (this.#toCommit === undefined) return;
    const lag = this.#highWatermark - this.#toCommit;
    this.#ctx.metrics.set(METRIC.lag, { topic: this.topic, partition: String(this.partition) }, Number(lag > 0n ? lag : 0n));
  }

  /** Adds a delivered chunk to the counters, one update per series rather than per message. */
  #count(produced: number, dlqReasons: ReadonlyMap<string, number>, results: readonly RecordResult[]): void {
    const metrics = this.#ctx.metrics;
    metrics.inc(METRIC.produced, {}, produced);
    for (const [reason, n] of dlqReasons) metrics.inc(METRIC.dlq, { reason }, n);
    const statuses = new Map<string, number>();
    const classes = new Map<string, number>();
    for (const { status, resultClass } of results) {
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (resultClass) classes.set(resultClass, (classes.get(resultClass) ?? 0) + 1);
    }
    for (const [status, n] of statuses) metrics.inc(METRIC.records, { status }, n);
    for (const [resultClass, n] of classes) metrics.inc(METRIC.classes, { class: resultClass }, n);
  }

  /** Engine results for `records`; repeats the whole chunk while any record is unavailable. */
  async #answer(records: Parameters<Engine['process']>[0], first: string, last: string): Promise<RecordResult[]> {
    const ctx = this.#ctx;
    // A drain ends a retry wait: the chunk is handed back rather than held past the stop.
    const signal = AbortSignal.any([this.#abort.signal, this.#drain.signal]);
    let paused = false;
    // When the retrier gives up: it counts --retry-max-ms from its first attempt, which starts now.
    const givesUpAt = new Date(Date.now() + ctx.retryMaxMs).toISOString();
    try {
      return await retry(
        async ({ attempt, remainingMs }) => {
          const results = await this.#attempt(records, attempt, remainingMs);
          // A drain delivers what was answered, up to the first unavailable record, and repeats nothing.
          if (this.#drain.signal.aborted) return results;
          const unavailable = results.filter((x) => x.status === 'unavailable');
          if (unavailable.length > 0) {
            const e = unavailable[0]!.error;
            throw new KafkaEnricherError(
              'unavailable',
              `${unavailable.length} of ${results.length} records of ${this.#where(first, last)} came back unavailable (${e?.code ?? 'unavailable'}: ${e?.message ?? ''})`,
              {
                retriable: true,
                requestId: unavailable[0]!.requestId ?? e?.requestId,
                topic: this.topic,
                partition: this.partition,
                offset: first,
              },
            );
          }
          return results;
        },
        {
          signal,
          maxAttempts: Number.MAX_SAFE_INTEGER,
          maxTotalMs: ctx.retryMaxMs,
          baseDelayMs: ctx.retryBaseDelayMs,
          maxDelayMs: 30_000,
          onRetry: ({ attempt, error, delayMs }) => {
            if (!paused && this.#retrying++ === 0) ctx.flow.pause(this.topic, this.partition, 'retry');
            paused = true;
            ctx.metrics.inc(METRIC.batchRetries);
            ctx.logger.warn('partition paused: retrying the batch', {
              reason: retryReason(error),
              topic: this.topic,
              partition: this.partition,
              firstOffset: first,
              lastOffset: last,
              attempt,
              delayMs,
              retryMaxMs: ctx.retryMaxMs,
              givesUpAt,
              error,
            });
          },
        },
      );
    } catch (err) {
      if (this.#handedBack(err)) return [];
      if (err instanceof RetriesExhaustedError) {
        throw new KafkaEnricherError(
          'retry-budget-exhausted',
          `${this.#where(first, last)} stayed unavailable for ${ctx.retryMaxMs / 1000} s (--retry-max-ms ${ctx.retryMaxMs}); its offsets stay uncommitted and are re-read on restart`,
          { cause: err, requestId: err.requestId, topic: this.topic, partition: this.partition, offset: first },
        );
      }
      // Run stops (isRunStop) and anything else end the run as they are.
      throw err;
    } finally {
      if (paused && --this.#retrying === 0) ctx.flow.resume(this.topic, this.partition, 'retry');
    }
  }

  /**
   * One attempt at `records`. A repeat runs for what is left of --retry-max-ms at most: one whose
   * calls hang would otherwise end only with their timeouts (30 s, and the transport's retries),
   * that long past the budget. Its calls are then cancelled and it fails as the budget used up.
   * The first attempt is not a repeat and has no such bound.
   */
  async #attempt(records: Parameters<Engine['process']>[0], attempt: number, remainingMs: number): Promise<RecordResult[]> {
    const signal = this.#abort.signal;
    if (attempt === 1) return this.#process(records, signal);
    const budget = AbortSignal.timeout(Math.max(1, remainingMs));
    try {
      return await this.#process(records, AbortSignal.any([signal, budget]));
    } catch (err) {
      if (!budget.aborted || signal.aborted) throw err;
      throw new RetriesExhaustedError(`Gave up after ${attempt} attempts: the retry time budget ran out during the last one`, {
        attempts: attempt,
        cause: err,
      });
    }
  }

  /**
   * `records` through the engine in slices, each once the call window admits it, all answered at
   * once. Once the window is closed (a drain) no further slice starts: the results are then those
   * of the slices started, a prefix of `records`. The drain does not abort a started slice: its
   * calls are under way (or queued right behind them) and are finished.
   */
  async #process(records: Parameters<Engine['process']>[0], signal: AbortSignal): Promise<RecordResult[]> {
    const { engine, calls } = this.#ctx;
    const started: Array<Promise<RecordResult[]>> = [];
    // The slices of this chunk enter the window after every slice of the partition's chunk before
    // it: interleaved, the two would be answered together, and the earlier one (which is delivered
    // and committed first) later than it need be.
    const previous = this.#admissions;
    let admitted!: () => void;
    this.#admissions = new Promise<void>((resolve) => (admitted = resolve));
    try {
      await previous;
      for (let i = 0; i < records.length; i += calls.slice) {
        const slice = records.slice(i, i + calls.slice);
        if (!(await calls.acquire(slice.length, signal))) break;
        const answer = engine.process(slice, { signal }).finally(() => calls.release(slice.length));
        // Observed at once: a slice may fail while the next one waits for the window.
        answer.catch(() => undefined);
        started.push(answer);
      }
    } finally {
      admitted();
      // On a failure the started slices still settle (the abort reaches them) before it is passed on.
      if (started.length > 0) await Promise.allSettled(started);
    }
    return (await Promise.all(started)).flat();
  }

  /** Whether `err` ended a chunk's retries only because a drain began: it is then handed back. */
  #handedBack(err: unknown): boolean {
    if (!this.#drain.signal.aborted || this.#abort.signal.aborted) return false;
    // The retrier reports an abort as `aborted`, with the failure it was about to repeat as cause:
    // a batch it would have repeated (records unavailable, the platform unreachable) is handed
    // back; anything else (a quota, a refused key) still ends the run.
    const cause = (err as { code?: unknown; cause?: unknown }).code === 'aborted' ? (err as { cause?: unknown }).cause : err;
    const unavailable = cause instanceof KafkaEnricherError && cause.code === 'unavailable';
    return cause === undefined || cause === this.#drain.signal.reason || unavailable || isRetriable(cause);
  }

  #where(first: string, last: string): string {
    return `${this.topic}[${this.partition}] offsets ${first}-${last}`;
  }
}

/** Why an answered message is dead-lettered instead of sent: enriched, it is over the brokers' limit. */
function tooLargeReason(enriched: Message, source: SourcePosition, limit: number, result: RecordResult): DlqReason {
  return {
    code: 'too-large',
    message:
      `offset ${source.offset}: the enriched message is ${messageBytes(enriched)} bytes, more than --max-message-bytes ${limit} ` +
      `(raise it together with the topics' max.message.bytes, or make the message smaller)`,
    requestId: result.requestId,
  };
}

/** Kafka's answers to a send larger than a broker or topic accepts (kafkajs error types). */
const REFUSED_AS_TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

/**
 * The error that ends the run when the send of a chunk's results (`where`) failed. A send the
 * brokers refused as too large, or for the input timestamps it carries (README "Timestamps"), would
 * be refused again on every start, so it says what to change (exit 2); any other failure is Kafka's,
 * the run stops with exit 75 and the chunk is re-read.
 */
export function sendFailure(err: unknown, where: string, limit: number, position: { topic: string; partition: number; offset: string }): KafkaEnricherError {
  const types = [...causes(err)].map((e) => (e as { type?: unknown }).type);
  if (types.includes('INVALID_TIMESTAMP')) {
    return new KafkaEnricherError(
      'message-timestamp-refused',
      `the brokers refused the results of ${where} for their timestamps (INVALID_TIMESTAMP): each carries its input message's timestamp, and the output or DLQ topic ` +
        `refuses timestamps that far from now (message.timestamp.before.max.ms, message.timestamp.after.max.ms or message.timestamp.difference.max.ms); ` +
        `remove those limits from the output and DLQ topics (or set their message.timestamp.type=LogAppendTime) and start again (the offsets stay uncommitted and are re-read)`,
      { cause: err, ...position },
    );
  }
  const refused = types.find((t): t is string => typeof t === 'string' && REFUSED_AS_TOO_LARGE.has(t));
  if (refused !== undefined) {
    return new KafkaEnricherError(
      'message-too-large',
      `the brokers refused the results of ${where} as too large (${refused}): a topic's max.message.bytes is below --max-message-bytes ${limit}; ` +
        `set --max-message-bytes to at most the smallest max.message.bytes of the output and DLQ topics and start again (the offsets stay uncommitted and are re-read)`,
      { cause: err, ...position },
    );
  }
  return new KafkaEnricherError(
    'kafka-failure',
    `sending the results of ${where} failed: ${(err as Error).message}; the offsets stay uncommitted and are re-read on restart`,
    { cause: err, ...position },
  );
}

/** `answer`, or a rejection with the abort's reason once `signal` aborts, whichever comes first. */
function untilAborted<T>(answer: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    answer.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

/**
 * What of an answered chunk can be delivered: all of it, or during a drain its messages up to the
 * first record without an answer (its call had not started) or answered `unavailable`, with the
 * results of the records among them.
 */
function deliverable(answered: Answered): Answered {
  const { decoded, results } = answered;
  let r = 0;
  for (let i = 0; i < decoded.length; i++) {
    if (decoded[i]!.kind !== 'record') continue;
    const result = results[r];
    if (result === undefined || result.status === 'unavailable') return { decoded: decoded.slice(0, i), results: results.slice(0, r) };
    r++;
  }
  return answered;
}

/**
 * Why a batch is repeated, for its warning: records that came back unavailable one by one
 * (`records-unavailable`), or the code of what stopped the batch's calls: the platform could not be
 * reached (`platform-unreachable`), the account's rate was used up by something else
 * (`rate-limited`).
 */
function retryReason(error: unknown): string {
  if (error instanceof KafkaEnricherError && error.code === 'unavailable') return 'records-unavailable';
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : 'error';
}
