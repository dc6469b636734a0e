import { closeSync, fstatSync, openSync, writeSync } from 'node:fs';
import { chmod, mkdir, open as openFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Database } from 'lmdb';
import { DqError } from '../errors/index.js';
import type { CachedResult } from '../engine/types.js';
import { lmdbStoreError, type StoreError } from './errors.js';
import { MissedKeys, storeKey } from './key.js';
import type { ResultStore, StoreInfo } from './types.js';

/** One stored entry: check time (ms since the epoch) and the result (its `checkedAt` included). */
interface Entry {
  t: number;
  r: CachedResult;
}

/** The database file in the store's folder; LMDB keeps its lock file next to it (`-lock`). */
const DATA_FILE = 'results.mdb';
/** Room kept written past LMDB's last page before a commit: at least this, … */
const ROOM_MIN = 256 * 1024;
/** … or this per answer of the commit (two pages: the answer and its share of the tree's pages). */
const ROOM_PER_ENTRY = 2 * 4096;
const ZEROS = Buffer.alloc(64 * 1024);

/** Whether `dir` holds an embedded result store (its database file), without creating anything. */
export async function lmdbStoreExists(dir: string): Promise<boolean> {
  try {
    return (await stat(join(dir, DATA_FILE))).isFile();
  } catch {
    return false;
  }
}

/**
 * Opens (creating if missing) the embedded result store in `dir`: an LMDB database (lmdb-js), a
 * memory-mapped B+tree. Reads are synchronous lookups in the map; the writes of one engine step
 * are committed as one transaction, and each `set` resolves once its transaction is committed.
 * The folder is created with mode 0700 and the files with 0600: they hold addresses and company
 * names. Several processes on one machine may use the same folder at once (LMDB's own locking).
 */
export async function openLmdbStore(dir: string, maxAgeMs: number): Promise<ResultStore> {
  const path = join(dir, DATA_FILE);
  let db: Database<Entry, string>;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Created empty with mode 0600 before LMDB opens them, so they are never readable by others.
    for (const file of [path, `${path}-lock`]) await (await openFile(file, 'a', 0o600)).close();
    // Loaded here, not at import: only a run with the embedded store loads the native module.
    const { open } = await import('lmdb');
    // noSync: a commit is written to the file (the OS has it: kill -9 loses nothing) without an
    // fsync per commit, which cost 5-15 times the throughput here (answers arrive one by one).
    // A crash of the machine itself may lose the latest entries (they are bought again) or, at
    // worst, damage the file: `dq-store clear` or deleting the folder starts it afresh.
    db = open<Entry, string>({ path, compression: false, noSync: true, sharedStructuresKey: Symbol.for('structures') });
    await chmod(path, 0o600);
  } catch (e) {
    throw storeError(dir, e);
  }
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch (e) {
    await db.close();
    throw storeError(dir, e);
  }
  /** LMDB's own figures: its last page, a fifth of the cost of getStats (which walks the free list). */
  const env = (db as unknown as { env: { info(): { lastPageNumber: number } } }).env;
  const { pageSize } = db.getStats() as { pageSize: number };
  /** Bytes of the data file known to be written (zeros past LMDB's last page included). */
  let written = 0;
  /**
   * Makes room for a commit of `entries` answers, within its write transaction (no other process
   * writes the file meanwhile, and no one has written past its end): zeros are written past LMDB's
   * last page, at least 256 KiB or an eighth of the file at a time. LMDB's page writes then land in blocks the file
   * already has, and a full disk or the file-size limit fails this plain write, with its errno,
   * instead of LMDB's own: its error path (lmdb-js 3.5) overruns a heap buffer, which can abort the
   * process (SIGABRT), and prints an unterminated "Write error" line onto stderr.
   */
  const makeRoom = (entries: number) => {
    const { lastPageNumber } = env.info();
    const used = (lastPageNumber + 1) * pageSize;
    const needed = used + Math.max(ROOM_MIN, entries * ROOM_PER_ENTRY);
    if (written >= needed) return;
    written = fstatSync(fd).size;
    const target = needed + Math.ceil(Math.max(ROOM_MIN, used / 8) / pageSize) * pageSize;
    while (written < target) written += writeSync(fd, ZEROS, 0, Math.min(ZEROS.length, target - written), written);
  };
  const fresh = (entry: Entry | undefined, now: number): CachedResult | undefined =>
    entry !== undefined && maxAgeMs > 0 && now - entry.t < maxAgeMs ? entry.r : undefined;
  let closed: Promise<void> | undefined;
  let queued: Array<[string, Entry]> = [];
  let writing: Promise<void> | undefined;
  const missed = new MissedKeys();

  const store: ResultStore = {
    location: dir,
    get(key) {
      if (maxAgeMs <= 0) return undefined;
      return fresh(db.get(storeKey(key)), Date.now());
    },
    async getMany(keys) {
      const found = new Map<string, CachedResult>();
      if (maxAgeMs <= 0) return found;
      const now = Date.now();
      for (const key of keys) {
        const stored = storeKey(key);
        const value = fresh(db.get(stored), now);
        if (value !== undefined) found.set(key, value);
        else missed.missed(key, stored);
      }
      return found;
    },
    set(key, value) {
      if (closed) return Promise.reject(new DqError(`the result store ${dir} is closed`, { code: 'store-closed', retriable: false }));
      const t = value.checkedAt === undefined ? Date.now() : Date.parse(value.checkedAt);
      queued.push([missed.take(key), { t, r: value }]);
      // Answers stored within one turn of the event loop (they arrive one by one) are put
      // together as one transaction; each set resolves once it is committed.
      writing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        const batch = queued;
        queued = [];
        writing = undefined;
        try {
          // One synchronous transaction on this thread: no hand-off to LMDB's writer thread, whose
          // wake-up on a busy machine cost more than the write (measured: store-overhead bench).
          db.transactionSync(() => {
            makeRoom(batch.length);
            for (const [k, entry] of batch) db.putSync(k, entry);
          });
        } catch (e) {
          throw storeError(dir, e);
        }
      });
      return writing;
    },
    async info(): Promise<StoreInfo> {
      let oldest = Infinity;
      let newest = -Infinity;
      let entries = 0;
      for (const { value } of db.getRange()) {
        entries += 1;
        if (value.t < oldest) oldest = value.t;
        if (value.t > newest) newest = value.t;
      }
      const bytes = (await stat(path)).size;
      return entries === 0
        ? { location: dir, bytes, entries }
        : { location: dir, bytes, entries, oldest: new Date(oldest).toISOString(), newest: new Date(newest).toISOString() };
    },
    async prune(olderThanMs) {
      const cutoff = Date.now() - olderThanMs;
      let removed = 0;
      await db.transaction(() => {
        for (const { key, value } of db.getRange()) {
          if (value.t < cutoff) {
            db.removeSync(key);
            removed += 1;
          }
        }
      });
      return removed;
    },
    async clear() {
      const count = db.getCount();
      await db.clearAsync();
      return count;
    },
    close() {
      closed ??= (async () => {
        await writing?.catch(() => undefined);
        await db.close();
        closeSync(fd);
      })();
      return closed;
    },
  };
  return store;
}

function storeError(dir: string, cause: unknown): StoreError {
  return lmdbStoreError(dir, cause);
}
