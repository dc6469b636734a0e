import { createEngine, createLogger, DqError, ExitCode, exitCodeFor, stopAdvice } from '@dq/core';
import { cliFailure } from '@dq/core/cli';
import { emptyRunReport } from '@dq/core/engine';
import { openStore, reusesAnswers } from '@dq/core/store';
import { resolveRetryOptions, retryDelay, sleep } from '@dq/core/transport';
import type { Engine, Logger, RetryOptions, RunReport } from '@dq/core';
import type { Admin, Consumer, EachBatchPayload, Kafka, Producer } from 'kafkajs';
import { errorCodes } from 'kafkajs/src/protocol/error.js';
import { KafkaEnricherError } from './errors.js';
import { CallWindow, FlowControl } from './flow-control.js';
import { MapCheck } from './map-check.js';
import { createKafka } from './kafka-client.js';
import { METRIC, Metrics } from './metrics.js';
import { resolveEnricherOptions } from './options.js';
import type { EnricherOptions, ResolvedEnricherOptions } from './options.js';
import { orderPreservingPartitioner } from './output-partitioner.js';
import { PartitionPipeline } from './partition-pipeline.js';
import { checkTopics } from './topics.js';
import { startPosition } from './start-position.js';
import { settingsDiffer, settingsMetadata } from './group-settings.js';
import { brokerSpeakingTls, causes, kafkaSettingFailure, tlsExpected } from './kafka-settings.js';
import type { PipelineContext } from './partition-pipeline.js';

/** Consumer restarts after crashes kafkajs does not recover from, before the run ends (exit 75). */
const MAX_CONSUMER_RESTARTS = 5;
/**
 * Waits before restarting a crashed consumer: core's backoff with full jitter, up to 1 s before the
 * first restart and doubling up to 16 s, so instances of a group that crashed together (a broker
 * restart, a coordinator move) do not rejoin in lockstep.
 */
const RESTART_BACKOFF: RetryOptions = resolveRetryOptions({ baseDelayMs: 1000, maxDelayMs: 16_000 });

/** Wait in ms before the `restart`-th consumer restart in a row (1-based); `random` in [0, 1). */
export function consumerRestartDelayMs(restart: number, random: () => number = Math.random): number {
  return retryDelay({ kind: 'backoff' }, restart, { ...RESTART_BACKOFF, random });
}

/**
 * Longest wait of a fetch, in ms. kafkajs also sleeps this long when every assigned partition is
 * paused, so it bounds how soon a partition paused for a retry is fetched again (kafkajs default 5000).
 */
const FETCH_MAX_WAIT_MS = 500;

/**
 * Longest wait for room in the in-flight budget before the batch handler heartbeats and looks again
 * (a stop, a rebalance or a pause also wake it at once).
 */
const ROOM_WAIT_MS = 1000;

/** Life cycle of an {@link Enricher}. */
export type EnricherState = 'created' | 'starting' | 'running' | 'draining' | 'stopping' | 'stopped';

/** How a run ended. */
export interface EnricherOutcome {
  /**
   * 0 after a graceful stop that finished its in-flight work, 75 when the drain ran out of time or
   * Kafka or the platform stayed unavailable, 3 on a run stop (key, account, quota), 1 otherwise.
   */
  exitCode: ExitCode;
  /**
   * `stop`: {@link Enricher.stop} was called (SIGTERM) and the drain finished; `drain-timeout`: it was
   * called but in-flight work was still unfinished after `drainTimeoutMs`, or the drain was cut
   * short by `stop({ now: true })` (a second SIGINT); the unfinished work is handed back
   * uncommitted. `fatal`: a failure ended the run.
   */
  reason: 'stop' | 'drain-timeout' | 'fatal';
  /** What ended a fatal run or a drain that timed out: code, message (naming the partition and offsets) and request id. */
  error?: { code: string; message: string; requestId?: string };
  /** The engine's counts (API calls, retries, store use); records, statuses and classes of the messages delivered. */
  report: RunReport;
}

/** A Kafka stream enricher (one member of a consumer group). */
export interface Enricher {
  readonly metrics: Metrics;
  readonly state: EnricherState;
  /** Whether /healthz should answer 200: consuming in a joined group. */
  healthy(): { ok: boolean; state: string };
  /** Connects, joins the group and consumes until {@link stop} or a fatal failure; never rejects. */
  run(): Promise<EnricherOutcome>;
  /**
   * Graceful stop: fetching stops, the calls under way are finished and what is answered delivered,
   * for up to `drainTimeoutMs`; the rest is handed back uncommitted; offsets of finished work are
   * committed, the group is left. Called again with `now`, during the drain: the drain ends at once,
   * as if its time had run out.
   */
  stop(options?: { now?: boolean }): void;
}

/** Creates an enricher; nothing connects until `run()`. */
export function createEnricher(options: EnricherOptions): Enricher {
  return new KafkaEnricher(
    resolveEnricherOptions(options),
    options.logger ?? createLogger({ level: 'info' }),
    options.metrics ?? new Metrics(),
    options.onHint,
  );
}

class KafkaEnricher implements Enricher {
  readonly metrics: Metrics;
  readonly #o: ResolvedEnricherOptions;
  readonly #logger: Logger;
  readonly #pipelines = new Map<string, PartitionPipeline>();
  /** Cancelled pipelines per partition: a new one starts only after the old one's send settled. */
  readonly #retired = new Map<string, Promise<void>>();
  #state: EnricherState = 'created';
  #joined = false;
  #rebalancing = false;
  /** Consumer restarts since the last successful join. */
  #restarts = 0;
  #fatal: unknown;
  /** Set when the group refused the consumer during a stop: it has left the group, nothing more is committed. */
  #left = false;
  /** Delivered offsets a stop could not commit (a rebalance, the consumer gone), by partition: the highest of each. */
  readonly #uncommitted = new Map<string, { topic: string; partition: number; offset: string }>();
  /** Messages still in flight when a graceful drain ran out of time (undefined: it did not). */
  #undrained: number | undefined;
  #shutdown: Promise<void> | undefined;
  /** Set when the drain is to end at once (a second SIGINT). */
  #cutShort: (() => void) | undefined;
  readonly #cut = new Promise<'cut'>((resolve) => (this.#cutShort = () => resolve('cut')));
  #wasCut = false;
  #stopRequested!: () => void;
  readonly #stopSignal = new Promise<void>((resolve) => (this.#stopRequested = resolve));
  #engine: Engine | undefined;
  #consumer: Consumer | undefined;
  /** Settles once the current consumer's run() has joined the group (or failed to). */
  #consumerStarted: Promise<void> = Promise.resolve();
  #producer: Producer | undefined;
  #flow: FlowControl | undefined;
  #calls: CallWindow | undefined;
  readonly #mapCheck: MapCheck;
  readonly #connect: Connect;
  #kafka: Kafka | undefined;
  /** Committed with every offset: the settings instances of one group must share (group-settings.ts). */
  readonly #settings: string;
  /** The admin clients of settings checks under way: closed at shutdown, so none keeps the process alive. */
  readonly #checks = new Set<Admin>();

  constructor(options: ResolvedEnricherOptions, logger: Logger, metrics: Metrics, onHint: ((text: string) => void) | undefined) {
    this.#o = options;
    this.#logger = logger;
    this.metrics = metrics;
    this.#mapCheck = new MapCheck(onHint ?? ((text) => logger.warn(`hint: ${text}`)));
    this.#connect = connector(options);
    this.#settings = settingsMetadata(options);
    logger.redactor.add(options.apiKey);
    if (options.sasl) logger.redactor.add(options.sasl.password);
  }

  get state(): EnricherState {
    return this.#state;
  }

  healthy(): { ok: boolean; state: string } {
    return { ok: this.#state === 'running' && this.#joined, state: this.#joined || this.#state !== 'running' ? this.#state : 'joining' };
  }

  stop(options: { now?: boolean } = {}): void {
    this.#stopRequested();
    if (options.now) {
      this.#wasCut = true;
      this.#cutShort?.();
    }
  }

  async run(): Promise<EnricherOutcome> {
    if (this.#state !== 'created') throw new DqError('an enricher runs once; create a new one', { code: 'already-started', retriable: false });
    this.#state = 'starting';
    const o = this.#o;
    try {
      // The result store: a redelivered or repeated message (after a crash, a rebalance, or in a
      // later night's topic) is answered from it instead of being bought again.
      const { store, maxAgeMs, ...engineSettings } = o.engine ?? {};
      const resultStore = await openStore(store, { maxAgeMs });
      this.#engine = createEngine({
        mode: o.mode,
        baseUrl: o.baseUrl,
        realtimeUrl: o.realtimeUrl,
        apiKey: o.apiKey,
        defaultCountry: o.country,
        include: o.include,
        logger: this.#logger,
        resultStore,
        ...engineSettings,
      });
      const engine = this.#engine;
      this.metrics.useEngineReport(() => engine.report());
      // A shared budget that cannot be used stops the consumer now, not at its first message.
      await engine.ready();
      const kafka = (this.#kafka = createKafka(o, this.#logger));
      const connect = this.#connect;
      await checkTopics(kafka, o, connect);
      const producer = (this.#producer = kafka.producer({
        idempotent: o.idempotent,
        ...(o.idempotent ? { maxInFlightRequests: 1 } : {}),
        // Topics are checked (or created, --create-topics) at start; a send never creates one.
        allowAutoTopicCreation: false,
        createPartitioner: orderPreservingPartitioner,
      }));
      this.#flow = new FlowControl(() => this.#consumer!, this.metrics, o.maxInFlight);
      // The engine's own default is 32 connections, and at least one per worker thread.
      this.#calls = new CallWindow(Math.max(o.engine?.concurrency ?? 32, o.engine?.threads ?? 0));
      await connect('producer', () => producer.connect());
      await this.#startConsumer(kafka);
      if (this.#state === 'starting') this.#state = 'running';
      if (this.#fatal === undefined)
        this.#logger.info('consuming', { input: o.inputTopic, output: o.outputTopic, dlq: o.dlqTopic, group: o.groupId, maxInFlight: o.maxInFlight });
      await this.#stopSignal;
    } catch (err) {
      this.#fail(err);
    }
    // The spending cap stops like a SIGTERM: the calls under way were paid for, and their answers
    // are delivered (README "Spending cap"); any other failure cancels what is in flight.
    await this.#stopAll(this.#fatal === undefined || exitCodeFor(this.#fatal) === ExitCode.MAX_CALLS);
    return this.#outcome();
  }

  /** Creates, connects, subscribes and runs a consumer; replaces the current one. */
  async #startConsumer(kafka: Kafka): Promise<void> {
    const o = this.#o;
    const consumer = (this.#consumer = kafka.consumer({
      groupId: o.groupId,
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: Math.min(3000, Math.floor(o.sessionTimeoutMs / 3)),
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: FETCH_MAX_WAIT_MS,
      // kafkajs would restart a consumer that crashed on a retriable error (brokers unreachable) by
      // itself, forever and unseen: every crash comes to #onCrash, whose restarts are counted.
      retry: { restartOnFailure: () => Promise.resolve(false) },
    }));
    consumer.on(consumer.events.REBALANCING, () => this.#onRebalancing());
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => this.#onJoin(payload.memberAssignment));
    // kafkajs's group leader assigns the partitions of its own topics only: given another topic's,
    // this instance would read nothing, and its topic would stay unread by the group.
    consumer.on(consumer.events.RECEIVED_UNSUBSCRIBED_TOPICS, ({ payload }) => this.#fail(groupInUse(o, payload.topicsNotSubscribed)));
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart) void this.#onCrash(kafka, consumer, payload.error);
    });
    // Read at every (re)start: --from-latest holds only while the group has committed nothing.
    const fromBeginning = await startPosition(kafka, o, this.#connect, this.#logger);
    await this.#connect('consumer', () => consumer.connect());
    await this.#connect('consumer', () => consumer.subscribe({ topic: o.inputTopic, fromBeginning }));
    const started = consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: (payload) => this.#take(payload),
    });
    this.#consumerStarted = started.catch(() => undefined);
    await started;
  }

  /**
   * kafkajs gave up on its consumer: a non-retriable error (e.g. a group protocol error during a
   * rebalance), or brokers it could not reach within its retries. Queued work is handed back and a
   * new consumer joins the group, up to {@link MAX_CONSUMER_RESTARTS} times in a row (a restart that
   * cannot connect counts as one); then the run ends with exit 75. Meanwhile /healthz says 503.
   */
  async #onCrash(kafka: Kafka, crashed: Consumer, error: Error): Promise<void> {
    const live = (): boolean => this.#state === 'starting' || this.#state === 'running';
    if (crashed === this.#consumer && this.#state === 'draining' && refusedByGroup(error, this.#o)) return this.#leftDuringStop(error);
    if (crashed !== this.#consumer || !live()) return void this.#fail(kafkaFailure(error, this.#o.brokers, this.#restarts));
    // Refused TLS or SASL settings are refused again by every restart.
    const setting = kafkaSettingFailure(error, this.#o);
    if (setting) return void this.#fail(setting);
    this.#joined = false;
    this.metrics.set(METRIC.up, {}, 0);
    this.#onRebalancing();
    await crashed.disconnect().catch(() => undefined);
    let last: unknown = error;
    while (live()) {
      if (++this.#restarts > MAX_CONSUMER_RESTARTS) return void this.#fail(kafkaFailure(last, this.#o.brokers, MAX_CONSUMER_RESTARTS));
      this.#logger.warn('the consumer crashed; handing queued work back and starting a new one', { attempt: this.#restarts, error: last as Error });
      await sleep(consumerRestartDelayMs(this.#restarts));
      if (!live()) return;
      try {
        return await this.#startConsumer(kafka);
      } catch (err) {
        last = err;
        await this.#consumer?.disconnect().catch(() => undefined);
        if (err instanceof KafkaEnricherError && err.exitCode === ExitCode.USAGE) return void this.#fail(err);
      }
    }
  }

  /**
   * eachBatch: hands the batch's messages to the partition's pipeline as the in-flight budget allows.
   * While the budget is used up it waits for room (heartbeating), so kafkajs fetches nothing more
   * meanwhile and the part of the batch already fetched is kept instead of being fetched again. It
   * returns early, leaving the rest unresolved for a later fetch, when the run stops, a rebalance
   * begins, kafkajs marks the batch stale (a seek) or the partition is paused for a retry.
   */
  async #take({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    const key = `${topic}\u0000${partition}`;
    const flow = this.#flow!;
    let messages = batch.messages;
    this.metrics.inc(METRIC.fetched, {}, messages.length);
    while (messages.length > 0) {
      if (this.#state !== 'running' || this.#rebalancing || !isRunning() || isStale() || flow.isPaused(topic, partition)) return;
      let pipeline = this.#pipelines.get(key);
      if (!pipeline) {
        pipeline = new PartitionPipeline(topic, partition, this.#context(), this.#retired.get(key));
        this.#pipelines.set(key, pipeline);
      }
      const fresh = pipeline.fresh(messages);
      if (fresh.length === 0) return;
      // Whole chunks where the batch has them: a sliver of room is not worth a chunk of its own.
      const wanted = Math.min(fresh.length, this.#o.batchSize);
      if (flow.room < wanted) {
        await flow.waitForRoom(topic, partition, wanted, ROOM_WAIT_MS);
        // Sent only when the heartbeat interval has passed; throws when a rebalance began, which
        // kafkajs answers by rejoining (the batch's untaken rest stays unresolved).
        await heartbeat();
        messages = fresh;
        continue;
      }
      const granted = flow.take(fresh.length);
      const taken = granted === fresh.length ? fresh : fresh.slice(0, granted);
      this.metrics.inc(METRIC.consumed, {}, granted);
      pipeline.enqueue(taken, batch.highWatermark, this.#o.batchSize);
      // Moves the fetch position only; offsets are committed by the pipeline after delivery.
      resolveOffset(taken[taken.length - 1]!.offset);
      messages = fresh.slice(granted);
    }
  }

  #context(): PipelineContext {
    const o = this.#o;
    return {
      engine: this.#engine!,
      producer: this.#producer!,
      flow: this.#flow!,
      calls: this.#calls!,
      metrics: this.metrics,
      logger: this.#logger,
      map: o.map,
      outputTopic: o.outputTopic,
      dlqTopic: o.dlqTopic,
      dqField: o.dqField,
      mapCheck: this.#mapCheck,
      maxMessageBytes: o.maxMessageBytes,
      retryMaxMs: o.retryMaxMs,
      retryBaseDelayMs: o.retryBaseDelayMs,
      commit: (topic, partition, offset) => this.#commit(topic, partition, offset),
      onFatal: (err) => this.#fail(err),
    };
  }

  async #commit(topic: string, partition: number, offset: string): Promise<void> {
    // A commit sent into a rebalance is refused anyway (and upsets the mock cluster's group state);
    // the partition's next owner re-reads from the last commit that got through. So does a commit
    // after the consumer left the group during a stop.
    if (this.#rebalancing || this.#left) return this.#notCommitted(topic, partition, offset);
    try {
      await this.#consumer!.commitOffsets([{ topic, partition, offset, metadata: this.#settings }]);
      this.metrics.inc(METRIC.commits);
      const skipped = this.#uncommitted.get(`${topic}\u0000${partition}`);
      if (skipped !== undefined && BigInt(skipped.offset) <= BigInt(offset)) this.#uncommitted.delete(`${topic}\u0000${partition}`);
    } catch (err) {
      // At least once: the next commit of the partition covers this one, or its new owner re-reads.
      this.#logger.warn('offset commit failed; the messages may be delivered again', { topic, partition, offset, error: err as Error });
      this.#notCommitted(topic, partition, offset);
    }
  }

  /** Notes, during a stop, a delivered offset left uncommitted, for the stop's last log line. */
  #notCommitted(topic: string, partition: number, offset: string): void {
    if (this.#state !== 'draining') return;
    const key = `${topic}\u0000${partition}`;
    const known = this.#uncommitted.get(key);
    if (known === undefined || BigInt(known.offset) < BigInt(offset)) this.#uncommitted.set(key, { topic, partition, offset });
  }

  /**
   * The group refused the consumer during a graceful stop (its rejoin, typically, in a rebalance
   * that members stopping together start): kafkajs gave it up and it has left the group, which the
   * stop was about to do. That loses nothing: the drain still delivers what is answered, and what it
   * cannot commit now is read again by the partitions' next owner. Not a failure of the run (the exit
   * code stays the drain's), unlike brokers that cannot be reached (exit 75, see refusedByGroup).
   */
  #leftDuringStop(error: Error): void {
    this.#left = true;
    this.#joined = false;
    this.#logger.warn(
      "the group refused the consumer during the stop (a rebalance): it has left the group; the drain goes on, and what it delivers from now on is not committed but read again by the partitions' next owner",
      { group: this.#o.groupId, error },
    );
  }

  /** A rebalance began: every pipeline hands its queued work back; nothing is committed until the rejoin. */
  #onRebalancing(): void {
    this.#rebalancing = true;
    for (const [key, pipeline] of this.#pipelines) this.#retired.set(key, pipeline.cancel());
    this.#pipelines.clear();
    this.#logger.info('rebalancing: queued work handed back', { group: this.#o.groupId });
  }

  /** A (re)join: the new assignment starts with fresh pipelines and no pauses. */
  #onJoin(assignment: Record<string, number[]>): void {
    this.#joined = true;
    this.#rebalancing = false;
    this.#restarts = 0;
    for (const [key, pipeline] of this.#pipelines) this.#retired.set(key, pipeline.cancel());
    this.#pipelines.clear();
    this.#flow?.reset();
    this.metrics.clear(METRIC.lag);
    this.metrics.set(METRIC.up, {}, 1);
    this.#logger.info('partitions assigned', { group: this.#o.groupId, assignment });
    void this.#checkSettings(assignment);
  }

  /**
   * Warns when partitions just assigned were last committed by a dq-kafka of the group with other
   * settings (README "One group, one set of settings"): an instance still running with them would
   * enrich the topic differently per partition. Only a warning: after a deliberate change (a --map
   * corrected), the next start is one too. A failed look-up is not worth stopping for.
   */
  async #checkSettings(assignment: Record<string, number[]>): Promise<void> {
    const o = this.#o;
    const assigned = new Set(assignment[o.inputTopic] ?? []);
    if (this.#kafka === undefined || assigned.size === 0) return;
    const admin = this.#kafka.admin();
    this.#checks.add(admin);
    try {
      await admin.connect();
      const [entry] = await admin.fetchOffsets({ groupId: o.groupId, topics: [o.inputTopic] });
      const partitionsBy = new Map<string, number[]>();
      for (const p of entry?.partitions ?? []) {
        const differs = assigned.has(p.partition) ? settingsDiffer(this.#settings, p.metadata) : [];
        if (differs.length > 0) partitionsBy.set(differs.join(', '), [...(partitionsBy.get(differs.join(', ')) ?? []), p.partition]);
      }
      for (const [differs, partitions] of partitionsBy)
        this.#logger.warn(
          `partitions last committed by a dq-kafka of this group with other settings: ${differs}; instances of one group must share --mode, --map, --country, --include, --output, --dlq and --dq-field, ` +
            `or the topic is enriched differently per partition: if an instance with those settings still runs, stop it or give it its own --group (after a deliberate change of settings, nothing needs doing)`,
          { group: o.groupId, topic: o.inputTopic, partitions },
        );
    } catch (err) {
      this.#logger.debug('the settings of the last commits could not be read', { error: err as Error });
    } finally {
      this.#checks.delete(admin);
      await admin.disconnect().catch(() => undefined);
    }
  }

  #fail(err: unknown): void {
    if (this.#fatal === undefined) {
      this.#fatal = err;
      // What to do now, as every connector says it (core's stopAdvice); the error itself is logged with it.
      const { kind, cause, advice } = stopAdvice(err, this.#resumeWords());
      const why = kind === 'failed' ? 'run failed' : `run stopped: ${cause}; ${advice}`;
      this.#logger.error(why, { error: err as Error });
    }
    this.#stopRequested();
  }

  /** Stops fetching; drains (graceful) or cancels (fatal) the pipelines; leaves the group. */
  #stopAll(graceful: boolean): Promise<void> {
    this.#shutdown ??= (async () => {
      this.#state = graceful ? 'draining' : 'stopping';
      this.metrics.set(METRIC.up, {}, 0);
      const pipelines = [...this.#pipelines.values()];
      if (this.#consumer && this.#joined) this.#flow?.pauseTopic(this.#o.inputTopic);
      if (graceful) {
        // Only the work under way is finished: the calls started and what is answered. Messages
        // whose calls have not started go back to Kafka uncommitted, so a stop during a backlog
        // ends in seconds, not after the whole in-flight budget was bought at the rate limit.
        this.#calls?.close();
        this.#logger.info('draining: finishing the calls under way and delivering what is answered; the rest is handed back uncommitted', {
          inFlight: this.#flow?.inFlight ?? 0,
          drainTimeoutMs: this.#o.drainTimeoutMs,
        });
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.#o.drainTimeoutMs)));
        const drained = await Promise.race([Promise.all(pipelines.map((p) => p.drain())), timedOut, this.#cut]);
        clearTimeout(timer);
        if (drained === 'timeout' || drained === 'cut') {
          this.#undrained = this.#flow?.inFlight ?? 0;
          const why = drained === 'cut' ? 'the drain was cut short by a second SIGINT' : 'the drain ran out of time';
          this.#logger.error(`${why}: unfinished work is handed back uncommitted`, {
            inFlight: this.#undrained,
            drainTimeoutMs: this.#o.drainTimeoutMs,
          });
        }
      }
      // Fatal, or the drain ran out of time: queued work goes back to Kafka uncommitted.
      await Promise.all([...pipelines.map((p) => p.cancel()), ...this.#retired.values()]);
      // kafkajs ignores a stop while its consumer is still joining and then starts fetching, which
      // would keep the process alive: a failure found during a join (a restart's) waits for it.
      await this.#consumerStarted;
      await Promise.all([...this.#checks].map((admin) => admin.disconnect().catch(() => undefined)));
      await this.#consumer?.disconnect().catch((err: unknown) => this.#logger.warn('leaving the consumer group failed', { error: err as Error }));
      await this.#producer?.disconnect().catch((err: unknown) => this.#logger.warn('closing the producer failed', { error: err as Error }));
      await this.#engine?.close();
      this.#state = 'stopped';
    })();
    return this.#shutdown;
  }

  /** How a stopped dq-kafka continues, for core's stopAdvice. */
  #resumeWords(): { resume: string; kept: string } {
    const { store, maxAgeMs } = this.#o.engine ?? {};
    const answers = reusesAnswers(store, maxAgeMs) ? ', and answers already paid for are not bought again' : '';
    return { resume: 'restart', kept: `what was delivered is committed${answers}` };
  }

  /**
   * The engine's report, with the records, statuses and classes of the messages delivered: the
   * engine counts a record again each time its batch is repeated after unavailable records.
   */
  #report(): RunReport {
    const report = this.#engine?.report() ?? emptyRunReport();
    const delivered = <K extends string>(metric: string, label: string, keys: readonly K[]): Record<K, number> =>
      Object.fromEntries(keys.map((k) => [k, this.metrics.get(metric, { [label]: k })])) as Record<K, number>;
    const byStatus = delivered(METRIC.records, 'status', Object.keys(report.byStatus) as (keyof RunReport['byStatus'])[]);
    const byClass = delivered(METRIC.classes, 'class', Object.keys(report.byClass) as (keyof RunReport['byClass'])[]);
    return { ...report, records: Object.values<number>(byStatus).reduce((a, b) => a + b, 0), byStatus, byClass };
  }

  #outcome(): EnricherOutcome {
    const report = this.#report();
    const err = this.#fatal;
    if (err === undefined && this.#undrained !== undefined) {
      // A scheduler must not read a drain cut short as success: the work is not done.
      const why = this.#wasCut ? 'the drain was cut short by a second SIGINT' : `the drain did not finish within --drain-timeout-ms ${this.#o.drainTimeoutMs}`;
      const message = `${why}: ${this.#undrained} messages still under way were not delivered; they, and the messages handed back when the stop began, stay uncommitted and are re-read on the next start`;
      return { exitCode: ExitCode.TEMPFAIL, reason: 'drain-timeout', error: { code: 'drain-timeout', message }, report };
    }
    if (err === undefined) {
      if (this.#uncommitted.size > 0) {
        // Delivered, not lost: the partition's next owner reads them again from its last commit.
        this.#logger.warn(
          "delivered during the stop but not committed (a rebalance, or the commit refused): the partitions' next owner reads these messages again",
          {
            group: this.#o.groupId,
            uncommitted: [...this.#uncommitted.values()].map(({ topic, partition, offset }) => ({ topic, partition, deliveredBelow: offset })),
          },
        );
      }
      this.#logger.info('stopped', {
        records: report.records,
        apiCalls: report.apiCalls,
        consumed: this.metrics.get(METRIC.consumed),
        produced: this.metrics.get(METRIC.produced),
      });
      return { exitCode: ExitCode.OK, reason: 'stop', report };
    }
    return { ...fatalOutcome(err, (t) => this.#logger.redactor.redact(t), this.#resumeWords()), reason: 'fatal', report };
  }
}

/**
 * The exit code and error of a run ended by `err`: its code and message with what to do (core's
 * stopAdvice); an unexpected error (a bug) is said so, its details (the stack) written to a file of
 * the temporary folder readable by this user only, which the message names, as every command's
 * unexpected errors are (README "Exit codes").
 */
export function fatalOutcome(
  err: unknown,
  redact: (text: string) => string,
  words: { resume: string; kept: string },
): { exitCode: ExitCode; error: { code: string; message: string; requestId?: string } } {
  const exitCode = exitCodeFor(err);
  if (exitCode === ExitCode.UNEXPECTED) {
    const text = cliFailure('dq-kafka', err, redact).text.trimEnd();
    return { exitCode, error: { code: 'unexpected', message: text.replace(/^dq-kafka: unexpected error: /, '') } };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  const code = err instanceof DqError ? err.code : 'unexpected';
  const requestId = err instanceof DqError ? err.requestId : undefined;
  // Platform errors name their request id already ("[…, HTTP 401, request id …]"): said once.
  const named = requestId === undefined || e.message.includes(requestId);
  // What to do now, as the log line of the stop says it (core's stopAdvice).
  const { kind, advice } = stopAdvice(err, words);
  const message = redact(`${e.message}${named ? '' : ` (request id ${requestId})`}${kind === 'failed' ? '' : `; ${advice}`}`);
  return { exitCode, error: requestId ? { code, message, requestId } : { code, message } };
}

/** Runs one connection step of the Kafka client `what`. */
type Connect = (what: string, step: () => Promise<void>) => Promise<void>;

/**
 * A {@link Connect} whose failure ends the run as refused TLS or SASL settings (exit 2, see
 * kafkaSettingFailure) or, for anything else, as Kafka's (exit 75).
 */
function connector(o: ResolvedEnricherOptions): Connect {
  let connected = false;
  return async (what, step) => {
    try {
      await step();
      connected = true;
    } catch (err) {
      const setting = kafkaSettingFailure(err, o, !connected);
      if (setting !== undefined) throw setting;
      if (!connected && (o.ssl === undefined || o.ssl === false)) {
        const tls = await brokerSpeakingTls(o.brokers);
        if (tls !== undefined) throw tlsExpected(tls, err);
      }
      throw new KafkaEnricherError('kafka-failure', `the Kafka ${what} could not connect: ${(err as Error).message}; check --brokers, TLS and SASL settings`, {
        cause: err,
      });
    }
  };
}

/**
 * The error that ends the run when the group's leader handed out partitions of `topics`, which this
 * instance does not read (README "One group, one set of settings"): another application, or a
 * dq-kafka with another --input, runs in the group. Exit 2: the same --group would be refused again.
 */
function groupInUse(o: ResolvedEnricherOptions, topics: readonly string[]): KafkaEnricherError {
  return new KafkaEnricherError(
    'group-in-use',
    `--group "${o.groupId}" is in use by consumers that read ${topics.map((t) => `"${t}"`).join(', ')}, not --input "${o.inputTopic}": ` +
      `the group's leader hands out the partitions of the topics it reads only, so while both run neither topic is read whole; ` +
      `give dq-kafka a --group of its own, then start again`,
    { topic: o.inputTopic },
  );
}

/**
 * Answers of the group coordinator that end a member's place in the group, its assignment or its
 * generation (a rebalance under way, the member or its generation no longer known). INVALID_REQUEST
 * is librdkafka's mock cluster's answer to a follower's SyncGroup that comes after the leader's,
 * where a broker returns the member's assignment (Kafka's group coordinator, group Stable).
 */
const LEFT_THE_GROUP = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID', 'INVALID_REQUEST']);

/** The {@link LEFT_THE_GROUP} answer each of kafkajs's messages stands for (kafkajs's own table of answers). */
const LEFT_THE_GROUP_BY_MESSAGE = new Map(errorCodes.filter((e) => LEFT_THE_GROUP.has(e.type)).map((e) => [e.message, e.type]));

/**
 * Whether the consumer's crash `error` is the group coordinator refusing the member (one of
 * {@link LEFT_THE_GROUP}), as a rebalance does, rather than brokers that could not be reached, a
 * coordinator that is not available, or refused TLS or SASL settings. The answer is looked for
 * through kafkajs's wrappers: the errors its retrier gives up with (KafkaJSNumberOfRetriesExceeded,
 * KafkaJSNonRetriableError, one inside the other when two retriers gave up) keep the error they
 * gave up on as `cause`.
 */
export function refusedByGroup(error: unknown, o: Pick<ResolvedEnricherOptions, 'ssl' | 'sasl'>): boolean {
  if (kafkaSettingFailure(error, o) !== undefined) return false;
  return [...causes(error)].some((e) => LEFT_THE_GROUP.has(groupAnswer(e) ?? ''));
}

/**
 * The answer of the group coordinator `e` carries: a KafkaJSProtocolError's type or, for the
 * KafkaJSError kafkajs retries a refused rejoin as (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
 * UNKNOWN_MEMBER_ID), which keeps the answer's message only, the answer of that message; that
 * wrapper is what a rejoin refused until kafkajs's retries ran out ends the consumer with.
 */
function groupAnswer(e: Error): string | undefined {
  if (e.name === 'KafkaJSProtocolError') return String((e as { type?: unknown }).type);
  if (e.name === 'KafkaJSError' && e.cause === undefined) return LEFT_THE_GROUP_BY_MESSAGE.get(e.message);
  return undefined;
}

/** The error that ends the run when the consumer crashed and `restarts` restarts in a row did not bring it back. */
function kafkaFailure(error: unknown, brokers: readonly string[], restarts: number): KafkaEnricherError {
  const tried = restarts > 0 ? ` and ${restarts} restarts in a row did not bring it back` : '';
  // A restart that could not connect says so in its own words; its advice is given here once.
  const why = error instanceof KafkaEnricherError && error.cause instanceof Error ? error.cause : (error as Error);
  return new KafkaEnricherError(
    'kafka-failure',
    `the Kafka consumer stopped${tried}: ${why.message}; check that the brokers (${brokers.join(',')}) are up and reachable, then restart dq-kafka (uncommitted messages are re-read)`,
    { cause: error },
  );
}
