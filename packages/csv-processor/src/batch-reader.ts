import type { Source, SourceItem } from './source/types.js';

/** Rows kept with the engine at once when batches are small: enough to hide a commit's latency. */
const ROWS_AHEAD = 2_000;

/**
 * Batches kept with the engine for `batchSize`: at least 2 (one being written, one being called),
 * at most 8, about {@link ROWS_AHEAD} rows in all.
 */
export function batchesInFlight(batchSize: number): number {
  return Math.min(8, Math.max(2, Math.ceil(ROWS_AHEAD / batchSize)));
}

/** A batch that has been handed to the engine. */
export interface InFlight<R> {
  /** Input items of the batch (rows and rejects), in input order. */
  readonly items: SourceItem[];
  /** The engine's results for the batch's rows, in their order. */
  readonly results: Promise<R[]>;
}

/**
 * Reads a source in batches of `batchSize` rows (rejects ride along without counting) and keeps a
 * window of `window` batches started ahead of the one being consumed, so the engine always holds
 * work while the consumer writes and checkpoints. Reading ahead stops at the window: memory is
 * bounded by `window × batchSize` rows whatever the input size.
 */
export class BatchReader<R> {
  readonly #batches: AsyncGenerator<SourceItem[]>;
  readonly #window: number;
  readonly #start: (items: SourceItem[]) => InFlight<R>;
  readonly #started: InFlight<R>[] = [];
  #filling: Promise<void> | undefined;
  #ended = false;
  #stopped = false;
  #error: unknown;

  /**
   * @param start hands a batch to the engine; called in input order, at most `window` batches
   *   ahead of the consumer.
   */
  constructor(source: Source, batchSize: number, window: number, start: (items: SourceItem[]) => InFlight<R>) {
    this.#batches = readBatches(source, batchSize);
    this.#window = window;
    this.#start = start;
  }

  /**
   * The oldest started batch (starting the next ones meanwhile); undefined at the end of the input.
   * A read error is thrown once the batches read before it have been consumed.
   */
  async next(): Promise<InFlight<R> | undefined> {
    for (;;) {
      const oldest = this.#started.shift();
      if (oldest) {
        void this.#fill();
        return oldest;
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended || this.#stopped) return undefined;
      await this.#fill();
    }
  }

  /** Stops reading ahead and waits for a read in progress (before the source is closed). */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#filling;
    await this.#batches.return(undefined).catch(() => undefined);
  }

  #fill(): Promise<void> {
    // `finally` runs asynchronously, after the assignment, even when nothing was to be read.
    this.#filling ??= this.#readAhead().finally(() => (this.#filling = undefined));
    return this.#filling;
  }

  async #readAhead(): Promise<void> {
    try {
      while (!this.#ended && !this.#stopped && this.#started.length < this.#window) {
        const next = await this.#batches.next();
        if (next.done) this.#ended = true;
        else if (!this.#stopped) this.#started.push(this.#start(next.value));
      }
    } catch (err) {
      this.#error = err;
      this.#ended = true;
    }
  }
}

/**
 * Groups items into batches of `size` rows (rejects ride along without counting). A read error
 * comes after a last batch of the items read before it, so they are written as usual.
 */
async function* readBatches(source: Source, size: number): AsyncGenerator<SourceItem[]> {
  let batch: SourceItem[] = [];
  let rows = 0;
  try {
    for await (const item of source.items) {
      batch.push(item);
      if (item.kind === 'row' && ++rows >= size) {
        yield batch;
        batch = [];
        rows = 0;
      }
    }
  } catch (err) {
    if (batch.length > 0) yield batch;
    throw err;
  }
  if (batch.length > 0) yield batch;
}
