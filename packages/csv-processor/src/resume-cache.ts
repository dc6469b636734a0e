import { open, rm, type FileHandle } from 'node:fs/promises';
import type { CachedResult, ResultCache } from '@dq/core';
import { digestOf, LruMap, ResultIndex, type Location } from './cache-index.js';

/** A result cache that survives kill -9 and keeps memory bounded. */
export interface ResumeCache extends ResultCache {
  /** Results that can be found (indexed in the file, or waiting to be written). */
  readonly size: number;
  close(): Promise<void>;
  /** Closes and deletes the file (after a finished run). */
  remove(): Promise<void>;
}

/** Options of {@link openResumeCache}. */
export interface ResumeCacheOptions {
  /**
   * Index slots (24 bytes each, allocated up front); the least recently used of a set of four is
   * replaced first. Default 262 144 (6 MiB), which keeps about 98 % of the last 100 000 results.
   */
  maxEntries?: number;
  /** Results kept parsed in memory for repeats close together. Default 2 000. */
  hotEntries?: number;
}

/**
 * Opens the result cache of a resumable run: every definitive result is appended to an NDJSON
 * file (`{"k":key,"v":result}` per line) as soon as the engine stores it, so results paid for by a
 * killed run (including those of the batches in flight) are found again by `--resume` instead of
 * being bought twice. The results stored in one engine step are written with one positional write,
 * which kill -9 does not lose (the kernel has it once the call returns).
 *
 * Memory does not grow with the input: only a fixed-size index (a digest of the key → where its
 * line is, see {@link ResultIndex}) and the last `hotEntries` results are held; an older repeat is
 * read back from the file. On open the file's lines are indexed (the most recent win) and a line
 * torn by a kill is cut off. The file holds input addresses, like the output.
 *
 * @param fresh true to start empty (truncate), false to continue what a previous run wrote.
 */
export async function openResumeCache(path: string, fresh: boolean, options: ResumeCacheOptions = {}): Promise<ResumeCache> {
  const index = new ResultIndex(options.maxEntries ?? 262_144);
  const hot = new LruMap<CachedResult>(options.hotEntries ?? 2_000);
  const handle: FileHandle = await open(path, fresh ? 'w+' : await existing(path));
  let end = 0; // bytes written or queued: where the next line goes
  try {
    if (!fresh) end = await loadIndex(handle, index);
  } catch (err) {
    await handle.close();
    throw err;
  }

  /** Results stored but not yet written: findable, and indexed once their write returns. */
  const unwritten = new Map<string, CachedResult>();
  let queue: PendingWrite | undefined;
  let writing: Promise<void> = Promise.resolve();
  let closed = false;

  const flush = async (lines: string[], entries: Array<[string, Location]>, at: number): Promise<void> => {
    const data = Buffer.from(lines.join(''), 'utf8');
    let written = 0;
    while (written < data.length) {
      const { bytesWritten } = await handle.write(data, written, data.length - written, at + written);
      written += bytesWritten;
    }
    for (const [key, location] of entries) {
      index.set(digestOf(key), location);
      unwritten.delete(key);
    }
  };

  const cache: ResumeCache = {
    get size() {
      return index.size + unwritten.size;
    },
    get(key) {
      const value = unwritten.get(key) ?? hot.get(key);
      if (value !== undefined) return value;
      const location = closed ? undefined : index.get(digestOf(key));
      if (location === undefined) return undefined;
      return readResult(handle, location, key).then((result) => {
        if (result !== undefined) hot.set(key, result);
        return result;
      });
    },
    set(key, value) {
      if (closed) return;
      hot.set(key, value);
      unwritten.set(key, value);
      const line = `${JSON.stringify({ k: key, v: value })}\n`;
      const location: Location = { offset: end, length: Buffer.byteLength(line) };
      end += location.length;
      if (queue === undefined) {
        // One write for everything stored in this engine step: the engine stores a chunk's results
        // synchronously, then awaits the returned promises.
        const batch: PendingWrite = { lines: [], entries: [], done: Promise.resolve() };
        const at = location.offset;
        batch.done = writing = writing.then(() => {
          queue = undefined;
          return flush(batch.lines, batch.entries, at);
        });
        queue = batch;
      }
      queue.lines.push(line);
      queue.entries.push([key, location]);
      return queue.done;
    },
    async close() {
      if (closed) return;
      closed = true;
      await writing.catch(() => undefined);
      await handle.close();
    },
    async remove() {
      await cache.close();
      await rm(path, { force: true });
    },
  };
  return cache;
}

/** Lines stored in one engine step, written together. */
interface PendingWrite {
  readonly lines: string[];
  /** Key and place of each line, indexed once the write returns. */
  readonly entries: Array<[string, Location]>;
  done: Promise<void>;
}

/** 'r+' when the file exists (resume), else 'w+' (a resume that finds no cache starts empty). */
async function existing(path: string): Promise<'r+' | 'w+'> {
  try {
    await (await open(path, 'r')).close();
    return 'r+';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'w+';
    throw err;
  }
}

/** Reads one line back; undefined when it is not the line of `key` (never expected). */
async function readResult(handle: FileHandle, location: Location, key: string): Promise<CachedResult | undefined> {
  const buffer = Buffer.allocUnsafe(location.length);
  const { bytesRead } = await handle.read(buffer, 0, location.length, location.offset);
  try {
    const { k, v } = JSON.parse(buffer.toString('utf8', 0, bytesRead)) as { k: unknown; v: CachedResult };
    return k === key ? v : undefined;
  } catch {
    return undefined;
  }
}

const READ_CHUNK = 1024 * 1024; // bytes
const LF = 0x0a;

/**
 * Indexes the lines of a previous run's file and cuts off a last line torn by a kill (no newline),
 * so new lines start on a line of their own. Returns the length kept.
 */
async function loadIndex(handle: FileHandle, index: ResultIndex): Promise<number> {
  let offset = 0; // of `pending[0]` in the file
  let pending = Buffer.alloc(0);
  const chunk = Buffer.allocUnsafe(READ_CHUNK);
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, READ_CHUNK, offset + pending.length);
    if (bytesRead === 0) break;
    pending = Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
    let start = 0;
    for (let lf = pending.indexOf(LF); lf !== -1; lf = pending.indexOf(LF, start)) {
      indexLine(pending.subarray(start, lf), offset + start, index);
      start = lf + 1;
    }
    pending = Buffer.from(pending.subarray(start));
    offset += start;
  }
  if (pending.length > 0) await handle.truncate(offset);
  return offset;
}

function indexLine(line: Buffer, offset: number, index: ResultIndex): void {
  try {
    const { k, v } = JSON.parse(line.toString('utf8')) as { k: unknown; v: unknown };
    if (typeof k === 'string' && v !== null && typeof v === 'object') index.set(digestOf(k), { offset, length: line.length + 1 });
  } catch {
    // a line that does not parse is skipped: its result is simply bought again
  }
}
