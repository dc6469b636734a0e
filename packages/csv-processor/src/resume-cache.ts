import { createReadStream } from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { CachedResult, ResultCache } from '@dq/core';

/** A result cache that survives kill -9 and keeps memory bounded. */
export interface ResumeCache extends ResultCache {
  /** Entries held in memory. */
  readonly size: number;
  close(): Promise<void>;
  /** Closes and deletes the file (after a finished run). */
  remove(): Promise<void>;
}

/**
 * Opens the result cache of a resumable run: every definitive result is appended to an NDJSON
 * file as soon as the engine stores it, so results paid for by a killed run (including those of
 * the batch in flight) are found again by `--resume` instead of being bought twice. Memory holds
 * the `maxEntries` most recently used entries (default 100 000); on open the file's last
 * `maxEntries` distinct keys are loaded. Appends go straight to the file descriptor, which kill -9
 * does not lose (the kernel has them); the file holds input addresses, like the output.
 *
 * @param fresh true to start empty (truncate), false to load what a previous run wrote.
 */
export async function openResumeCache(path: string, fresh: boolean, maxEntries = 100_000): Promise<ResumeCache> {
  const entries = new Map<string, CachedResult>();
  const remember = (key: string, value: CachedResult) => {
    entries.delete(key);
    entries.set(key, value);
    if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
  };
  if (!fresh) {
    try {
      const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
      for await (const line of lines) {
        try {
          const { k, v } = JSON.parse(line) as { k: string; v: CachedResult };
          if (typeof k === 'string' && v && typeof v === 'object') remember(k, v);
        } catch {
          // a line torn by the kill: the result is simply bought again
        }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  const handle: FileHandle = await open(path, fresh ? 'w' : 'a');
  let writing: Promise<unknown> = Promise.resolve();
  let closed = false;

  const cache: ResumeCache = {
    get size() {
      return entries.size;
    },
    get(key) {
      const value = entries.get(key);
      if (value !== undefined) remember(key, value);
      return value;
    },
    set(key, value) {
      remember(key, value);
      if (closed) return;
      const line = JSON.stringify({ k: key, v: value }) + '\n';
      // Serialised so lines never interleave; the engine need not wait for the disk.
      writing = writing.then(() => handle.appendFile(line, 'utf8'));
      return writing.then(() => undefined);
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
