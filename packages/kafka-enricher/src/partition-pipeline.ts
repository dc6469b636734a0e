import { retry, RetriesExhaustedError } from '@dq/core';
import type { Engine, Logger, RecordResult } from '@dq/core';
import type { KafkaMessage, Message, Producer, TopicMessages } from 'kafkajs';
import { KafkaEnricherError } from './errors.js';
import type { FieldMap } from './field-map.js';
import type { FlowControl } from './flow-control.js';
import { decodeMessage, dlqMessage, enrichedMessage, invalidInputReason } from './message-codec.js';
import type { Decoded, SourcePosition } from './message-codec.js';
import { METRIC } from './metrics.js';
import type { Metrics } from './metrics.js';
import { tagInputPartition } from './output-partitioner.js';

/** What a pipeline needs from the enricher. */
export interface PipelineContext {
  engine: Engine;
  producer: Producer;
  flow: FlowControl;
  metrics: Metrics;
  logger: Logger;
  map: FieldMap;
  outputTopic: string;
  dlqTopic: string;
  dqField: string;
  retryMaxMs: number;
  retryBaseDelayMs: number;
  /** Commits `offset` (the next one to read) of the partition; failures are logged, not thrown. */
  commit(topic: string, partition: number, offset: string): Promise<void>;
  /** A failure that ends the run (run stop, retry budget used up, Kafka refused a send). */
  onFatal(error: unknown): void;
}

interface Chunk {
  messages: KafkaMessage[];
  highWatermark: string;
}

/**
 * The ordered work of one input partition: chunks of messages go through the engine one after the
 * other, their enriched and dead-letter messages are sent, and only after Kafka acknowledged them is
 * the chunk's last offset + 1 committed. Records that come back `unavailable` pause the partition and
 * the chunk is repeated through core's retrier until it is answered (never dead-lettered).
 */
export class PartitionPipeline {
  readonly topic: string;
  readonly partition: number;
  readonly #ctx: PipelineContext;
  readonly #queue: Chunk[] = [];
  readonly #abort = new AbortController();
  readonly #previous: Promise<void>;
  #running: Promise<void> | undefined;
  #idleWaiters: Array<() => void> = [];
  /** Offset after the last message taken in; redeliveries below it are ignored. */
  #nextOffset: bigint | undefined;

  constructor(topic: string, partition: number, ctx: PipelineContext, previous: Promise<void> = Promise.resolve()) {
    this.topic = topic;
    this.partition = partition;
    this.#ctx = ctx;
    this.#previous = previous;
  }

  /** Messages not yet taken in (offset at or after the last one taken). */
  fresh(messages: KafkaMessage[]): KafkaMessage[] {
    const next = this.#nextOffset;
    return next === undefined ? messages : messages.filter((m) => BigInt(m.offset) >= next);
  }

  /** Queues messages (already counted in the in-flight budget) in chunks of `batchSize`. */
  enqueue(messages: KafkaMessage[], highWatermark: string, batchSize: number): void {
    if (this.#abort.signal.aborted || messages.length === 0) {
      this.#ctx.flow.release(messages.length);
      return;
    }
    for (let i = 0; i < messages.length; i += batchSize) this.#queue.push({ messages: messages.slice(i, i + batchSize), highWatermark });
    this.#nextOffset = BigInt(messages[messages.length - 1]!.offset) + 1n;
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
   * partition next) and aborts a pending engine call or retry wait. A chunk whose send has started
   * still completes and is committed. Resolves when the pipeline is idle.
   */
  cancel(): Promise<void> {
    this.#abort.abort();
    const dropped = this.#queue.splice(this.#running ? 1 : 0);
    this.#ctx.flow.release(dropped.reduce((n, c) => n + c.messages.length, 0));
    return this.idle();
  }

  async #loop(): Promise<void> {
    await this.#previous;
    while (this.#queue.length > 0) {
      const chunk = this.#queue[0]!;
      try {
        if (!this.#abort.signal.aborted) await this.#process(chunk);
      } catch (err) {
        if (!this.#abort.signal.aborted) this.#ctx.onFatal(err);
        this.#abort.abort();
      } finally {
        this.#queue.shift();
        this.#ctx.flow.release(chunk.messages.length);
      }
      if (this.#abort.signal.aborted) {
        this.#ctx.flow.release(this.#queue.splice(0).reduce((n, c) => n + c.messages.length, 0));
      }
    }
  }

  async #process(chunk: Chunk): Promise<void> {
    const ctx = this.#ctx;
    const first = chunk.messages[0]!.offset;
    const last = chunk.messages[chunk.messages.length - 1]!.offset;
    const decoded = chunk.messages.map((m) => decodeMessage(m, ctx.map));
    const toAsk = decoded.filter((d): d is Extract<Decoded, { kind: 'record' }> => d.kind === 'record');
    const results = toAsk.length === 0 ? [] : await this.#answer(toAsk.map((d) => d.record), first, last);
    if (this.#abort.signal.aborted) return;

    const out: Message[] = [];
    const dlq: Message[] = [];
    const dlqReasons: string[] = [];
    let r = 0;
    for (const d of decoded) {
      const source: SourcePosition = { topic: this.topic, partition: this.partition, offset: d.message.offset };
      if (d.kind === 'reject') {
        dlq.push(tagInputPartition(dlqMessage(d.message, source, { code: d.code, message: `offset ${d.message.offset}: ${d.reason}` }), this.partition));
        dlqReasons.push(d.code);
        continue;
      }
      const result = results[r++]!;
      if (result.status === 'invalid-input') {
        const reason = invalidInputReason(result);
        dlq.push(tagInputPartition(dlqMessage(d.message, source, reason), this.partition));
        dlqReasons.push(reason.code);
      } else {
        out.push(tagInputPartition(enrichedMessage(d, result, source, ctx.dqField), this.partition));
      }
    }
    const topicMessages: TopicMessages[] = [];
    if (out.length > 0) topicMessages.push({ topic: ctx.outputTopic, messages: out });
    if (dlq.length > 0) topicMessages.push({ topic: ctx.dlqTopic, messages: dlq });
    try {
      await ctx.producer.sendBatch({ topicMessages, acks: -1 });
    } catch (err) {
      throw new KafkaEnricherError('kafka-failure', `sending the results of ${this.#where(first, last)} failed: ${(err as Error).message}; the offsets stay uncommitted and are re-read on restart`, { cause: err, topic: this.topic, partition: this.partition, offset: first });
    }
    ctx.metrics.inc(METRIC.produced, {}, out.length);
    for (const reason of dlqReasons) ctx.metrics.inc(METRIC.dlq, { reason });
    for (const result of results) {
      ctx.metrics.inc(METRIC.records, { status: result.status });
      if (result.resultClass) ctx.metrics.inc(METRIC.classes, { class: result.resultClass });
    }
    const next = (BigInt(last) + 1n).toString();
    await ctx.commit(this.topic, this.partition, next);
    const lag = BigInt(chunk.highWatermark) - BigInt(next);
    ctx.metrics.set(METRIC.lag, { topic: this.topic, partition: String(this.partition) }, Number(lag > 0n ? lag : 0n));
  }

  /** Engine results for `records`; repeats the whole chunk while any record is unavailable. */
  async #answer(records: Parameters<Engine['process']>[0], first: string, last: string): Promise<RecordResult[]> {
    const ctx = this.#ctx;
    const signal = this.#abort.signal;
    let paused = false;
    try {
      return await retry(
        async () => {
          const results = await ctx.engine.process(records, { signal });
          const unavailable = results.filter((x) => x.status === 'unavailable');
          if (unavailable.length > 0) {
            const e = unavailable[0]!.error;
            throw new KafkaEnricherError('unavailable', `${unavailable.length} of ${results.length} records of ${this.#where(first, last)} came back unavailable (${e?.code ?? 'unavailable'}: ${e?.message ?? ''})`, {
              retriable: true,
              requestId: unavailable[0]!.requestId ?? e?.requestId,
              topic: this.topic,
              partition: this.partition,
              offset: first,
            });
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
            if (!paused) ctx.flow.pause(this.topic, this.partition, 'retry');
            paused = true;
            ctx.metrics.inc(METRIC.batchRetries);
            ctx.logger.warn('partition paused: records unavailable, retrying the batch', { topic: this.topic, partition: this.partition, firstOffset: first, lastOffset: last, attempt, delayMs, error });
          },
        },
      );
    } catch (err) {
      if (err instanceof RetriesExhaustedError) {
        throw new KafkaEnricherError('retry-budget-exhausted', `${this.#where(first, last)} stayed unavailable for --retry-max-ms; its offsets stay uncommitted and are re-read on restart`, { cause: err, requestId: err.requestId, topic: this.topic, partition: this.partition, offset: first });
      }
      // Run stops (isRunStop) and anything else end the run as they are.
      throw err;
    } finally {
      if (paused) ctx.flow.resume(this.topic, this.partition, 'retry');
    }
  }

  #where(first: string, last: string): string {
    return `${this.topic}[${this.partition}] offsets ${first}-${last}`;
  }
}
