/**
 * Moves a body into a file in blocks of shared memory: each full block is handed to the hasher and
 * written at its offset (libuv thread pool) at the same time, while the next block fills from the
 * socket. Several blocks are in flight, so receiving, hashing and writing overlap; the file's
 * pages are flushed to disk as it grows, so the closing fsync has little left to do.
 */
import type { FileHandle } from 'node:fs/promises';
import type { EarlyBody } from './http.js';
import type { BlockHasher } from './sha512-hasher.js';

const MAX_BLOCK = 1024 * 1024; // bytes per block: one hash message, one write(2)
const MAX_BLOCKS = 16; // blocks in flight per download: 16 MiB absorbs a hashing thread descheduled for a while
const MIN_BLOCK = 4096;
const SYNC_EVERY = 32 * 1024 * 1024; // bytes written between background fdatasync calls

/** Outcome of {@link writeBody}. */
export interface WriteOutcome {
  /** Bytes written contiguously from the start position (hashed too when `hashInStep`). */
  written: number;
  /** False when a block reached the hasher but not the file (or the hasher failed): re-hash the file. */
  hashInStep: boolean;
  /** The body's error, a write error or the hasher's failure; undefined when all went well. */
  error: unknown;
}

/** A fixed set of equal blocks in one `SharedArrayBuffer`; a block is reused once released. */
class BlockRing {
  readonly #buffer: SharedArrayBuffer;
  readonly #size: number;
  readonly #free: number[];
  #waiter: (() => void) | undefined;

  /** `expected`: bytes likely to pass (sizes the ring for small files), undefined when unknown. */
  constructor(expected: number | undefined) {
    const want = expected ?? MAX_BLOCK * MAX_BLOCKS;
    this.#size = Math.max(MIN_BLOCK, Math.min(MAX_BLOCK, want));
    const count = Math.max(1, Math.min(MAX_BLOCKS, Math.ceil(want / this.#size)));
    this.#buffer = new SharedArrayBuffer(this.#size * count);
    this.#free = Array.from({ length: count }, (_, i) => i);
  }

  get blockSize(): number {
    return this.#size;
  }

  /** A free block's index, or undefined while all are in flight. */
  tryTake(): number | undefined {
    return this.#free.shift();
  }

  /** Calls `then` once, when a block is released. */
  whenFree(then: () => void): void {
    this.#waiter = then;
  }

  /** A free block's index; waits while all are in flight. */
  async take(): Promise<number> {
    for (;;) {
      const i = this.tryTake();
      if (i !== undefined) return i;
      await new Promise<void>((resolve) => this.whenFree(resolve));
    }
  }

  view(block: number, length = this.#size): Uint8Array {
    return new Uint8Array(this.#buffer, block * this.#size, length);
  }

  release(block: number): void {
    this.#free.push(block);
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }
}

async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < bytes.length;) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, position + done);
    if (bytesWritten === 0) throw new Error(`the file system took no bytes at offset ${position + done}`);
    done += bytesWritten;
  }
}

/**
 * Writes `body` to `fh` from `position` on while feeding `hasher` the same bytes in the same
 * order, then fsyncs. Never throws: whatever arrived before a failure is still hashed, written
 * and synced (so a retry resumes after it) and the failure is returned. `expected` is how many
 * bytes the body should have (sizes the buffers); `onBytes` gets the bytes taken so far.
 */
export async function writeBody(
  body: EarlyBody,
  fh: FileHandle,
  position: number,
  hasher: BlockHasher,
  expected: number | undefined,
  onBytes?: (taken: number) => void,
): Promise<WriteOutcome> {
  const ring = new BlockRing(expected);
  const inFlight = new Set<Promise<void>>();
  const syncs: Promise<void>[] = [];
  let flushed = 0; // bytes handed to the hasher and the file, from position on
  let synced = 0;
  let firstBadWrite = Infinity; // offset (from position) of the earliest failed write
  let hashFailed = false;
  let failure: unknown; // of a write, a sync or the hasher: stops taking the body
  let block = -1;
  let fill = 0;

  const flush = () => {
    const b = block;
    const view = ring.view(b, fill);
    const at = flushed;
    flushed += fill;
    block = -1;
    fill = 0;
    const hashed = hasher.update(view).catch((e: unknown) => {
      hashFailed = true;
      failure ??= e;
    });
    const written = writeAll(fh, view, position + at).catch((e: unknown) => {
      firstBadWrite = Math.min(firstBadWrite, at);
      failure ??= e;
    });
    const both: Promise<void> = Promise.all([hashed, written]).then(() => {
      inFlight.delete(both);
      ring.release(b);
    });
    inFlight.add(both);
    if (flushed - synced >= SYNC_EVERY) {
      synced = flushed;
      syncs.push(fh.datasync().catch((e: unknown) => void (failure ??= e)));
    }
  };

  // Copies `chunk` into blocks; returns the part that found no free block (undefined: all taken).
  const take = (chunk: Buffer): Buffer | undefined => {
    for (let off = 0; off < chunk.length;) {
      if (failure !== undefined) return undefined; // the rest would not be written anyway
      if (block < 0) {
        const b = ring.tryTake();
        if (b === undefined) return chunk.subarray(off);
        block = b;
      }
      const n = Math.min(ring.blockSize - fill, chunk.length - off);
      chunk.copy(ring.view(block), fill, off, off + n);
      fill += n;
      off += n;
      if (fill === ring.blockSize) flush();
    }
    return undefined;
  };

  // Chunks are pushed (no promise per 64 KiB chunk). While every block is in flight the socket is
  // paused and what arrived meanwhile waits in `waiting`; it is taken before the body's end counts.
  const bodyError = await new Promise<unknown>((resolve) => {
    const waiting: Buffer[] = [];
    let taken = 0;
    let end: { error: unknown } | undefined;
    let done = false;
    const settle = () => {
      if (done || waiting.length > 0 || (end === undefined && failure === undefined)) return;
      done = true;
      if (end === undefined) body.destroy(); // stopped by a failure: release the connection
      resolve(end?.error);
    };
    const drain = () => {
      while (waiting.length > 0) {
        const rest = take(waiting[0] as Buffer);
        if (rest !== undefined) {
          waiting[0] = rest;
          ring.whenFree(drain);
          return;
        }
        waiting.shift();
      }
      body.resume();
      settle();
    };
    body.attach({
      data(chunk) {
        taken += chunk.length;
        onBytes?.(taken);
        if (done) return;
        if (waiting.length > 0) {
          waiting.push(chunk);
          return;
        }
        const rest = take(chunk);
        if (rest !== undefined) {
          waiting.push(rest);
          body.pause();
          ring.whenFree(drain);
        }
        settle();
      },
      done(error) {
        end = { error };
        settle();
      },
    });
  });
  if (fill > 0) flush();
  else if (block >= 0) ring.release(block);
  await Promise.all(inFlight);
  await Promise.all(syncs);
  const written = Math.min(flushed, firstBadWrite);
  if (written < flushed) await fh.truncate(position + written).catch(() => undefined);
  try {
    await fh.sync();
  } catch (e) {
    failure ??= e;
  }
  return { written, hashInStep: !hashFailed && written === flushed, error: failure ?? bodyError };
}

/** Feeds `hasher` the file's bytes `0..size-1`, reading the next block while the last is hashed. */
export async function hashFile(fh: FileHandle, size: number, hasher: BlockHasher): Promise<void> {
  const ring = new BlockRing(size);
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  for (let at = 0; at < size && failure === undefined;) {
    const b = await ring.take();
    const { bytesRead } = await fh.read(ring.view(b), 0, Math.min(ring.blockSize, size - at), at);
    if (bytesRead === 0) throw new Error(`file ended at ${at} of ${size} bytes while hashing it`);
    at += bytesRead;
    const p: Promise<void> = hasher
      .update(ring.view(b, bytesRead))
      .catch((e: unknown) => void (failure ??= e))
      .then(() => {
        inFlight.delete(p);
        ring.release(b);
      });
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  if (failure !== undefined) throw failure;
}
