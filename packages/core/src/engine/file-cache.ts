import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { DqError } from '../errors/index.js';
import type { CachedResult, ResultCache } from './types.js';

/** A persistent result cache; `close()` must be awaited so every line reaches the disk. */
export interface FileCache extends ResultCache {
  /** Entries loaded from the file plus those set since. */
  readonly size: number;
  /** Lines of the file that could not be read (a torn last line after a crash) and were ignored. */
  readonly skippedLines: number;
  close(): Promise<void>;
}

/**
 * Opens (or creates) a persistent result cache: an append-only NDJSON file of `{"k":key,"v":result}`
 * lines, loaded into memory on open, so a resumed run does not pay again for inputs it already
 * validated. A torn last line (the process died mid-write) is skipped; for a key written twice
 * the last line wins. The file holds input addresses and results: keep it where the data may live.
 *
 * @param path file to load and append to; its folder is created if missing.
 */
export async function openFileCache(path: string): Promise<FileCache> {
  const entries = new Map<string, CachedResult>();
  let skipped = 0;
  try {
    const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
    for await (const line of lines) {
      if (line.trim() === '') continue;
      const entry = parseLine(line);
      if (entry) entries.set(entry.k, entry.v);
      else skipped += 1;
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw cacheError(path, e);
  }
  await mkdir(dirname(path), { recursive: true });
  const out: WriteStream = createWriteStream(path, { flags: 'a', encoding: 'utf8' });
  let writeError: unknown;
  out.on('error', (e) => {
    writeError = e;
  });
  let closed: Promise<void> | undefined;

  return {
    get size() {
      return entries.size;
    },
    skippedLines: skipped,
    get(key) {
      return entries.get(key);
    },
    async set(key, value) {
      if (writeError !== undefined) throw cacheError(path, writeError);
      if (closed) throw new DqError(`result cache ${path} is closed`, { code: 'cache-closed', retriable: false });
      entries.set(key, value);
      // Backpressure: wait for the drain rather than buffering an unbounded backlog in memory.
      if (!out.write(`${JSON.stringify({ k: key, v: value })}\n`)) await once(out, 'drain');
    },
    close() {
      closed ??= new Promise<void>((resolve, reject) => {
        out.end((e?: Error | null) => (e ? reject(cacheError(path, e)) : resolve()));
      });
      return closed;
    },
  };
}

function parseLine(line: string): { k: string; v: CachedResult } | undefined {
  try {
    const entry = JSON.parse(line) as { k?: unknown; v?: unknown };
    if (typeof entry.k !== 'string' || typeof entry.v !== 'object' || entry.v === null) return undefined;
    const status = (entry.v as { status?: unknown }).status;
    if (typeof status !== 'string' || status === 'unavailable') return undefined;
    return { k: entry.k, v: entry.v as CachedResult };
  } catch {
    return undefined;
  }
}

function cacheError(path: string, cause: unknown): DqError {
  const reason = (cause as NodeJS.ErrnoException).code ?? 'I/O error';
  return new DqError(`result cache ${path} cannot be used (${reason}); check the path and its permissions`, {
    code: 'cache-io',
    retriable: false,
    cause,
  });
}
