import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, openSync, writeSync } from 'node:fs';
import { access, chmod, chown, mkdir, mkdtemp, open as openFile, rm, stat, symlink } from 'node:fs/promises';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database, Key } from 'lmdb';
import { DqError } from '../errors/index.js';
import type { CachedResult } from '../engine/types.js';
import { lmdbStoreError, STORE_UNREACHABLE, StoreError } from './errors.js';
import { MissedKeys, storeKey } from './key.js';
import type { ResultStore, StoreInfo } from './types.js';

/** One stored entry: check time (ms since the epoch) and the result (its `checkedAt` included). */
interface Entry {
  t: number;
  r: CachedResult;
}

/** The database file in the store's folder; LMDB keeps its lock file next to it (`-lock`). */
const DATA_FILE = 'results.mdb';
/** The files of an embedded store in its folder. */
export const LMDB_FILES: readonly string[] = [DATA_FILE, `${DATA_FILE}-lock`];
/** Room kept written past LMDB's last page before a commit: at least this, … */
const ROOM_MIN = 256 * 1024;
/** … or this per answer of the commit (two pages: the answer and its share of the tree's pages). */
const ROOM_PER_ENTRY = 2 * 4096;
const ZEROS = Buffer.alloc(64 * 1024);

/**
 * Whether `dir` holds an embedded result store (its database file), without creating anything:
 * false when `dir` or the file does not exist. A `dir` that is a file, or a store this user may not
 * read, is a {@link StoreError} (exit 2), not "no store": a run could not create one there either.
 */
export async function lmdbStoreExists(dir: string): Promise<boolean> {
  const folder = await stat(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    if (e.code === 'ENOTDIR') {
      throw new StoreError('usage', `the result store ${dir} is not a folder (a part of its path is a file): give --store the store's folder`, { cause: e });
    }
    throw lmdbStoreError(dir, e);
  });
  if (folder === undefined) return false;
  if (!folder.isDirectory()) {
    throw new StoreError('usage', `the result store ${dir} is not a folder (a file is in its place): give --store the store's folder`);
  }
  try {
    return (await stat(join(dir, DATA_FILE))).isFile();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw lmdbStoreError(dir, e);
  }
}

/**
 * The header (meta) pages of the LMDB that lmdb-js 3.x builds (its `mdb.c`): pages 0 and 1, each a
 * 24-byte page header (page number, transaction id, pad, flags, lower, upper) followed by the meta
 * data: magic, data version, map address and size, the free and main trees (the free tree's first
 * field is the page size), the last page used and the id of the transaction that wrote it. Numbers
 * are in the machine's byte order.
 */
const META = { flags: 18, magic: 24, version: 28, pageSize: 48, lastPage: 144, txnId: 152, end: 160 } as const;
const P_META = 0x08;
const MDB_MAGIC = 0xbeefc0de;
const MDB_DATA_VERSION = 2;

/**
 * What is wrong with the store's data file at `path`, or undefined when its header pages are
 * LMDB's and the file holds every page they name (a missing or empty file is fine: LMDB lays it
 * out). Checked before LMDB opens the file: lmdb-js crashes the process (SIGSEGV) on a file whose
 * header is not LMDB's, and a page read past the end of a file cut short is SIGBUS, so a store
 * damaged on disk (README "Why LMDB") would end every run without a word.
 */
export async function lmdbFileDamage(path: string): Promise<string | undefined> {
  // Another process laying out a new store writes its two header pages at once: a file caught in
  // that write is looked at again before it is called damaged.
  if ((await readDamage(path)) === undefined) return undefined;
  await new Promise((resolve) => setTimeout(resolve, LAYOUT_GRACE_MS));
  return readDamage(path);
}

/** How long a store file that looks damaged is given to be a new one being laid out. */
const LAYOUT_GRACE_MS = 200;

async function readDamage(path: string): Promise<string | undefined> {
  let handle;
  try {
    handle = await openFile(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const le = endianness() === 'LE';
    const u32 = (b: Buffer, at: number) => (le ? b.readUInt32LE(at) : b.readUInt32BE(at));
    const u64 = (b: Buffer, at: number) => (le ? b.readBigUInt64LE(at) : b.readBigUInt64BE(at));
    const meta = async (at: number): Promise<Buffer | undefined> => {
      const b = Buffer.alloc(META.end);
      const { bytesRead } = await handle.read(b, 0, META.end, at);
      const flags = le ? b.readUInt16LE(META.flags) : b.readUInt16BE(META.flags);
      return bytesRead === META.end && (flags & P_META) !== 0 && u32(b, META.magic) === MDB_MAGIC && (u32(b, META.version) & 0xffff) === MDB_DATA_VERSION
        ? b
        : undefined;
    };
    if ((await handle.stat()).size === 0) return undefined;
    const first = await meta(0);
    if (!first) return 'its first page is not an LMDB header';
    const pageSize = u32(first, META.pageSize);
    if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return `its header names a page size of ${pageSize} bytes`;
    const second = await meta(pageSize);
    if (!second) return 'its second page is not an LMDB header';
    const newest = u64(second, META.txnId) > u64(first, META.txnId) ? second : first;
    const needed = (u64(newest, META.lastPage) + 1n) * BigInt(pageSize);
    // The size after the header: a commit writes its pages before the header that names them.
    const size = (await handle.stat()).size;
    if (BigInt(size) < needed) return `cut short: ${size} bytes of the ${needed} its last commit wrote`;
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Whether `path` is a file of an LMDB database (the store's data file or LMDB's lock file beside
 * it), by the magic number LMDB writes at the start of both: a program writing a whole file there
 * would destroy every answer stored in it. False for a file that cannot be read or is not LMDB's.
 */
export async function isLmdbFile(path: string): Promise<boolean> {
  let handle;
  try {
    handle = await openFile(path, 'r');
  } catch {
    return false;
  }
  try {
    const b = Buffer.alloc(META.magic + 4);
    const { bytesRead } = await handle.read(b, 0, b.length, 0);
    const u32 = (at: number) => (endianness() === 'LE' ? b.readUInt32LE(at) : b.readUInt32BE(at));
    // The lock file starts with the magic; the data file's first page has it after its page header.
    return (bytesRead >= 4 && u32(0) === MDB_MAGIC) || (bytesRead === b.length && u32(META.magic) === MDB_MAGIC);
  } catch {
    return false;
  } finally {
    await handle.close();
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * Removes the store's data file in `dir` when it is damaged (see {@link lmdbFileDamage}), so that the
 * store starts afresh; returns what was wrong with it, or undefined (nothing removed) when it is not.
 * A file with no LMDB header and no LMDB lock file beside it was never a store's (a file of another
 * program that happens to have the name): it is left alone, and the caller gets a `usage` error.
 */
export async function removeDamagedLmdbFile(dir: string): Promise<string | undefined> {
  const path = join(dir, DATA_FILE);
  const damage = await lmdbFileDamage(path).catch((e: unknown) => {
    throw lmdbStoreError(dir, e);
  });
  if (damage === undefined) return undefined;
  if (!(await exists(`${path}-lock`))) {
    throw new StoreError(
      'usage',
      `${path} is not a result store's file (${damage}, and no ${DATA_FILE}-lock beside it: no store was ever opened there): it was left alone; give --store the store's folder (if this is a damaged store whose lock file was deleted, delete ${DATA_FILE} yourself)`,
    );
  }
  await rm(path, { force: true });
  return damage;
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
  let db: Database<Entry | true, string>;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST' && e.code !== 'ENOTDIR') throw e;
      const what = e.code === 'EEXIST' ? 'a file is in its place' : 'a part of its path is a file';
      throw new StoreError(
        'usage',
        `the result store ${dir} is not a folder (${what}): give --store a folder (it is created if missing), or pass --store off`,
        {
          cause: e,
        },
      );
    });
    // Looked at before anything is created in the folder: a damaged store, or a file of another
    // program under the store's name, gets no lock file beside it from this open.
    const damage = await lmdbFileDamage(path);
    if (damage !== undefined && !(await exists(`${path}-lock`))) {
      throw new StoreError(
        'usage',
        `${path} is not a result store's file (${damage}, and no ${DATA_FILE}-lock beside it: no store was ever opened there): give --store another folder, or pass --store off`,
      );
    }
    if (damage === undefined) {
      // Created empty with mode 0600 before LMDB opens them, so they are never readable by others.
      // Root (`sudo dq-store clear`, a run as root) creating one in the store folder of another
      // user gives it to that user: a file of root's in it would stop that user's runs (EACCES).
      const owner = process.getuid?.() === 0 ? await stat(dir) : undefined;
      for (const file of [path, `${path}-lock`]) {
        const created = owner !== undefined && owner.uid !== 0 && !(await exists(file));
        await (await openFile(file, 'a', 0o600)).close();
        if (created) await chown(file, owner.uid, owner.gid);
      }
    }
    if (damage !== undefined) {
      throw new StoreError(
        'store-io',
        `the result store ${dir} is damaged (${path}: ${damage}); its answers cannot be read: run dq-store clear --store ${dir} to start it afresh (answers are bought again as needed), or pass --store off`,
      );
    }
    // Loaded here, not at import: only a run with the embedded store loads the native module.
    const { open } = await import('lmdb');
    // noSync: a commit is written to the file (the OS has it: kill -9 loses nothing) without an
    // fsync per commit, which cost 5-15 times the throughput here (answers arrive one by one).
    // A crash of the machine itself may lose the latest entries (they are bought again) or, at
    // worst, damage the file: `dq-store clear` or deleting the folder starts it afresh.
    db = open<Entry | true, string>({ path, compression: false, noSync: true, sharedStructuresKey: Symbol.for('structures') });
    await chmod(path, 0o600);
  } catch (e) {
    throw e instanceof StoreError ? e : storeError(dir, e);
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
  const makeRoom = (entries: number, removing = false) => {
    const { lastPageNumber } = env.info();
    const used = (lastPageNumber + 1) * pageSize;
    // A removal copies at most each page of the tree once (one per removed entry at most): room
    // for that, not for new answers, or a clear would leave the file many times its size.
    const room = removing ? Math.min(entries * pageSize, used) : entries * ROOM_PER_ENTRY;
    const needed = used + Math.max(ROOM_MIN, room);
    if (written >= needed) return;
    written = fstatSync(fd).size;
    const target = needed + Math.ceil(Math.max(ROOM_MIN, used / 8) / pageSize) * pageSize;
    while (written < target) written += writeSync(fd, ZEROS, 0, Math.min(ZEROS.length, target - written), written);
  };
  // An entry whose check time lies more than a day ahead of this clock (written while the clock
  // was set wrong, and later stepped back) is not used: its age cannot be told, and taken as
  // negative it would be reused until the clock caught up, however far past --max-age that is.
  const fresh = (entry: Entry | true | undefined, now: number): CachedResult | undefined =>
    typeof entry === 'object' && maxAgeMs > 0 && now - entry.t < maxAgeMs && entry.t - now <= FUTURE_SLACK_MS ? entry.r : undefined;
  let closed: Promise<void> | undefined;
  let queued: Array<[string, Entry]> = [];
  let writing: Promise<void> | undefined;
  const missed = new MissedKeys();

  /**
   * Removes the entries `found` (each with the check time it was read with), with room made first
   * like a commit of answers ({@link makeRoom}): removing copies the pages it changes, so on a full
   * disk the plain write of the room fails with its errno (`store-io` naming the full disk) before
   * LMDB writes, whose own error path can crash the process; the transactions committed before it
   * stay committed.
   *
   * Runs may write to the store meanwhile (README "The result store"): an entry a run wrote again
   * after it was read here (a fresh answer for an old input) is the run's, and is kept. And the
   * entries go in transactions of {@link REMOVE_CHUNK}: LMDB lets one process write at a time, and
   * a run waiting to commit its answers waits with its whole event loop, so one transaction for a
   * store of millions of entries would stall every run using it for seconds.
   */
  const removeAll = async (found: ReadonlyArray<{ key: string; t: number }>): Promise<number> => {
    let removed = 0;
    try {
      for (let at = 0; at < found.length; at += REMOVE_CHUNK) {
        // A pause between transactions: LMDB's write lock is not handed to a waiting run in turn,
        // and without one this loop would take it again before any run woke up.
        if (at > 0) await new Promise((resolve) => setTimeout(resolve, CHUNK_PAUSE_MS));
        const chunk = found.slice(at, at + REMOVE_CHUNK);
        db.transactionSync(() => {
          makeRoom(chunk.length + 1, true);
          for (const { key, t } of chunk) {
            // Read within this write transaction: what is stored now, not what the scan saw.
            const now = db.get(key);
            if (typeof now === 'object' && now.t === t) {
              db.removeSync(key);
              removed += 1;
            }
          }
        });
      }
    } catch (e) {
      throw storeError(dir, e);
    }
    return removed;
  };
  /**
   * Every entry with its key: the answers, not a record of the store's own (a store of an earlier
   * version holds one whose value is `true`), nor one of another program's LMDB under the store's
   * file name (`--store` at the wrong folder): `info` does not count it, `prune` and `clear` leave it.
   */
  const answers = function* () {
    for (const { key, value } of db.getRange()) if (isEntry(value)) yield { key, value };
  };

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
      for (const { value } of answers()) {
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
      const now = Date.now();
      const cutoff = now - olderThanMs;
      const old: Array<{ key: string; t: number }> = [];
      // An entry no run uses (dated more than a day ahead) goes too: it holds personal data to no purpose.
      for (const { key, value } of answers()) if (value.t < cutoff || value.t - now > FUTURE_SLACK_MS) old.push({ key, t: value.t });
      return removeAll(old);
    },
    async clear() {
      // Entry by entry, not by dropping the database: that would drop the record of the shapes
      // (msgpack structures) the answers are encoded with too, and an answer another process that
      // has the store open writes afterwards, in a shape it already knew, could not be read again.
      return removeAll([...answers()].map(({ key, value }) => ({ key, t: value.t })));
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

/**
 * What `dq-store info` shows of the embedded store in `dir` (its data file there: see
 * {@link lmdbStoreExists}), read with read access only: a data steward's user, a store folder of a
 * service account that its group may read, a read-only mount. It writes and creates nothing: LMDB
 * opens the data file read-only, and uses the lock file only where this user may write it.
 *
 * A reader that may not write the lock file (or on a read-only mount) is not in LMDB's table of
 * readers, so a run writing to the store meanwhile may reuse the pages of the snapshot it reads: the
 * LMDB documentation holds a reader without the lock safe on a read-only file system only, and such
 * a read can fail, return garbage, or end the process on an assertion of LMDB's (SIGABRT). That read
 * runs in a child process ({@link LMDB_INFO_CHILD}), chunk by chunk ({@link scanLmdbInfo}); a chunk
 * is taken only when it was read from an intact snapshot, and a child that fails or crashes is
 * started again from the last chunk taken.
 *
 * @throws StoreError `usage` for a `results.mdb` of another program, `store-io` for a damaged one,
 * `store-permission-denied` for one this user may not read, {@link STORE_UNREACHABLE} (exit 75) when
 * runs wrote to it too often throughout the read for it to be read without the lock.
 */
export async function readLmdbStoreInfo(dir: string): Promise<StoreInfo> {
  const path = join(dir, DATA_FILE);
  // Read (never changed) before LMDB maps the file: a damaged one would crash the process.
  const damage = await lmdbFileDamage(path).catch((e: unknown) => {
    throw storeError(dir, e);
  });
  if (damage !== undefined) {
    if (!(await exists(`${path}-lock`))) {
      throw new StoreError(
        'usage',
        `${path} is not a result store's file (${damage}, and no ${DATA_FILE}-lock beside it: no store was ever opened there): give --store the store's folder`,
      );
    }
    throw new StoreError(
      'store-io',
      `the result store ${dir} is damaged (${path}: ${damage}); its answers cannot be read: run dq-store clear --store ${dir} to start it afresh (answers are bought again as needed)`,
    );
  }
  let bytes: number;
  try {
    bytes = (await stat(path)).size;
  } catch (e) {
    throw storeError(dir, e);
  }
  // A data file a store's first open left empty (LMDB had not laid it out): nothing stored in it.
  if (bytes === 0) return { location: dir, bytes, entries: 0 };
  let entries = 0;
  let oldest = Infinity;
  let newest = -Infinity;
  const add = (chunk: InfoFigures) => {
    entries += chunk.entries;
    oldest = Math.min(oldest, chunk.low ?? Infinity);
    newest = Math.max(newest, chunk.high ?? -Infinity);
  };
  try {
    const lock = await lockState(dir);
    if (lock === 'usable') await scanLmdbInfo(path, { checkSnapshots: false }, (chunk) => add(chunk));
    else if (lock === 'missing') await throughPrivateLink(path, (link) => scanInChild(dir, link, add));
    else await scanInChild(dir, path, add);
  } catch (e) {
    throw e instanceof StoreError ? e : storeError(dir, e);
  }
  return entries === 0
    ? { location: dir, bytes, entries }
    : { location: dir, bytes, entries, oldest: new Date(oldest).toISOString(), newest: new Date(newest).toISOString() };
}

/**
 * How LMDB, opening the store in `dir` read-only, would use its lock file: `usable`, this user may
 * write it (LMDB counts this reader in it); `denied`, it may not (or a read-only mount: LMDB goes
 * without it); `missing`, none there (a store copied or restored without it; LMDB would create it).
 */
async function lockState(dir: string): Promise<'usable' | 'denied' | 'missing'> {
  try {
    await access(join(dir, `${DATA_FILE}-lock`), constants.R_OK | constants.W_OK);
    return 'usable';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'denied';
  }
}

/**
 * Runs `read` with a path to the data file `path` in a private folder of its own, a symbolic link:
 * LMDB makes the lock file it misses there, not in the store's folder (where one made by root, say,
 * would lock the store's owner out of it). Where no such folder can be made (no writable temporary
 * folder), `read` gets `path` itself.
 */
async function throughPrivateLink<T>(path: string, read: (path: string) => Promise<T>): Promise<T> {
  let folder: string | undefined;
  try {
    folder = await mkdtemp(join(tmpdir(), 'dq-store-info-'));
    await symlink(path, join(folder, DATA_FILE));
  } catch {
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
    return read(path);
  }
  try {
    return await read(join(folder, DATA_FILE));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The figures of some entries: how many, and their oldest and newest check times (ms). */
interface InfoFigures {
  entries: number;
  low?: number;
  high?: number;
}

/**
 * Reads the entries of the LMDB at `path`, opened read-only, {@link INFO_CHUNK} at a time, each
 * chunk in a read transaction of its own, starting after the key `after` (from the first key
 * without it), and calls `onChunk` with the figures read so far whenever the last key read can be
 * started after again (`after` then: a string or a number), and once at the end (`done`).
 *
 * `checkSnapshots`, for a reader not in LMDB's table of readers: LMDB reuses a page freed by
 * transaction N only in transaction N + 2 or later, so a chunk read while the store's last
 * transaction id rose by at most one since its read transaction began comes from an intact
 * snapshot; one read while it rose by more is read again, four times smaller, whatever it returned
 * or threw. Each entry is then counted once, as one of the snapshots during the read held it.
 *
 * @throws StoreError {@link STORE_UNREACHABLE} after {@link INFO_RETRIES} such reads of one chunk in a row.
 */
export async function scanLmdbInfo(
  path: string,
  options: { after?: Key; checkSnapshots: boolean },
  onChunk: (figures: InfoFigures & { after?: Key; done: boolean }) => void,
): Promise<void> {
  const { open } = await import('lmdb');
  // readOnly: the data file opened O_RDONLY, no write transaction, and the lock file used only
  // where this user may write it (lmdb-js's LMDB goes without it on EACCES and EROFS).
  const db = open<unknown, Key>({ path, readOnly: true, compression: false, sharedStructuresKey: Symbol.for('structures') });
  const env = (db as unknown as { env: { info(): { lastTxnId: number } } }).env;
  try {
    let after = options.after;
    let pending: InfoFigures = { entries: 0 };
    let chunk = INFO_CHUNK;
    let retries = 0;
    for (;;) {
      // A read transaction begun now (not one lmdb-js kept from before): its snapshot is at least `before`.
      db.resetReadTxn();
      const before = env.info().lastTxnId;
      const txn = db.useReadTransaction();
      const read: InfoFigures = { entries: 0 };
      let count = 0;
      let last: Key | undefined;
      let failure: unknown;
      try {
        const range = after === undefined ? { limit: chunk, transaction: txn } : { start: after, exclusiveStart: true, limit: chunk, transaction: txn };
        for (const { key, value } of db.getRange(range)) {
          count += 1;
          last = key;
          if (!isEntry(value)) continue;
          read.entries += 1;
          read.low = Math.min(read.low ?? Infinity, value.t);
          read.high = Math.max(read.high ?? -Infinity, value.t);
        }
      } catch (e) {
        failure = e;
      } finally {
        txn.done();
      }
      if (options.checkSnapshots && env.info().lastTxnId > before + 1) {
        // A writer may have reused pages of this snapshot: what it read is not trusted.
        if (++retries > INFO_RETRIES) {
          throw new StoreError(STORE_UNREACHABLE, `runs wrote to it throughout ${INFO_RETRIES} reads in a row`);
        }
        chunk = Math.max(1, Math.floor(chunk / 4));
        await new Promise((resolve) => setTimeout(resolve, 1));
        continue;
      }
      if (failure !== undefined) throw failure;
      retries = 0;
      pending = {
        entries: pending.entries + read.entries,
        ...(read.low === undefined && pending.low === undefined ? {} : { low: Math.min(pending.low ?? Infinity, read.low ?? Infinity) }),
        ...(read.high === undefined && pending.high === undefined ? {} : { high: Math.max(pending.high ?? -Infinity, read.high ?? -Infinity) }),
      };
      const done = count < chunk;
      if (!done) after = last;
      if (done || typeof last === 'string' || typeof last === 'number') {
        onChunk({ ...pending, ...(done ? {} : { after: last }), done });
        pending = { entries: 0 };
      }
      if (done) return;
      chunk = Math.min(INFO_CHUNK, chunk * 4);
    }
  } finally {
    await db.close();
  }
}

/**
 * The child process's script: `node --input-type=module -e LMDB_INFO_CHILD <url of this module>
 * <data file> [<JSON key to start after>]`. It prints a JSON line per chunk taken (see
 * {@link scanLmdbInfo}), or `{"error": …}` for an error read from an intact snapshot.
 */
const LMDB_INFO_CHILD = `const [url, path, after] = process.argv.slice(1);
const { scanLmdbInfo } = await import(url);
try {
  await scanLmdbInfo(path, { ...(after === undefined ? {} : { after: JSON.parse(after) }), checkSnapshots: true }, (chunk) => process.stdout.write(JSON.stringify(chunk) + '\\n'));
} catch (e) {
  process.stdout.write(JSON.stringify({ error: { message: String(e?.message ?? e), code: e?.code, unreachable: e?.code === ${JSON.stringify(STORE_UNREACHABLE)} } }) + '\\n');
  process.exitCode = 1;
}`;

/**
 * Reads the LMDB at `path` (the store in `dir`) in child processes (see {@link readLmdbStoreInfo}),
 * adding each chunk taken with `add`; a child that crashes or stops without a word is started
 * again after the last chunk taken, until {@link INFO_CHILD_RUNS} in a row took none.
 */
async function scanInChild(dir: string, path: string, add: (figures: InfoFigures) => void): Promise<void> {
  let after: Key | undefined;
  let idle = 0;
  for (;;) {
    let progress = false;
    let done = false;
    let error: { message: string; code?: unknown; unreachable?: boolean } | undefined;
    const txnBefore = await lastTxnId(path);
    const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve, reject) => {
      const args = ['--input-type=module', '-e', LMDB_INFO_CHILD, import.meta.url, path, ...(after === undefined ? [] : [JSON.stringify(after)])];
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let stderr = '';
      // A child stuck in a snapshot a writer overwrote (a loop in the pages it reads) is ended.
      let timer = setTimeout(() => child.kill('SIGKILL'), INFO_CHILD_SILENCE_MS);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        for (let at = out.indexOf('\n'); at >= 0; at = out.indexOf('\n')) {
          const text = out.slice(0, at);
          out = out.slice(at + 1);
          let line: InfoFigures & { after?: Key; done?: boolean; error?: typeof error };
          try {
            line = JSON.parse(text) as typeof line;
          } catch {
            continue; // not one of its lines (something a module printed)
          }
          if (line.error) {
            error = line.error;
            continue;
          }
          add(line);
          progress = true;
          if (line.done) done = true;
          else after = line.after;
          clearTimeout(timer);
          timer = setTimeout(() => child.kill('SIGKILL'), INFO_CHILD_SILENCE_MS);
        }
      });
      child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stderr });
      });
    });
    if (done) return;
    // An error read from an intact snapshot (not one a writer overwrote) is the store's.
    if (error !== undefined && !error.unreachable) throw storeError(dir, Object.assign(new Error(error.message), { code: error.code }));
    const last = ended.stderr.trim().split('\n').pop();
    const how = error?.message ?? `its reader ended ${ended.signal === null ? `with exit ${ended.code}` : `on ${ended.signal}`}${last ? `: ${last}` : ''}`;
    // A reader that crashed while no run wrote to the store read what is in the file: damage inside the tree.
    if (txnBefore !== undefined && txnBefore === (await lastTxnId(path))) {
      throw new StoreError(
        'store-io',
        `the result store ${dir} is damaged inside (${how}, and no run wrote to it meanwhile); its answers cannot be read: run dq-store clear --store ${dir} to start it afresh, or delete its folder with no run using it (answers are bought again as needed)`,
      );
    }
    idle = progress ? 0 : idle + 1;
    if (idle >= INFO_CHILD_RUNS) {
      throw new StoreError(
        STORE_UNREACHABLE,
        `the result store ${dir} cannot be read now (${how}; ${INFO_CHILD_RUNS} times in a row): runs wrote to it throughout the read, and this user may not write its lock file ${DATA_FILE}-lock, which lets a reader read alongside them; rerun, or run dq-store info as a user who may write that file`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The id of the last transaction committed to the LMDB data file at `path`, from its two header
 * pages (see {@link META}); undefined when they cannot be read.
 */
async function lastTxnId(path: string): Promise<bigint | undefined> {
  try {
    const handle = await openFile(path, 'r');
    try {
      const le = endianness() === 'LE';
      const b = Buffer.alloc(META.end);
      await handle.read(b, 0, META.end, 0);
      const pageSize = le ? b.readUInt32LE(META.pageSize) : b.readUInt32BE(META.pageSize);
      const first = le ? b.readBigUInt64LE(META.txnId) : b.readBigUInt64BE(META.txnId);
      await handle.read(b, 0, META.end, pageSize);
      const second = le ? b.readBigUInt64LE(META.txnId) : b.readBigUInt64BE(META.txnId);
      return first > second ? first : second;
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}

/** Entries {@link scanLmdbInfo} reads in one read transaction (about a millisecond). */
const INFO_CHUNK = 1_000;
/** How often in a row it reads a chunk again that runs wrote through, before giving up. */
const INFO_RETRIES = 50;
/** Child processes in a row that took no chunk (crashed, or gave up), before giving up (exit 75). */
const INFO_CHILD_RUNS = 10;
/** How long a child reading the store may go without taking a chunk before it is ended. */
const INFO_CHILD_SILENCE_MS = 30_000;

/** Most entries `prune` and `clear` remove in one write transaction (about 10 ms of holding LMDB's write lock). */
const REMOVE_CHUNK = 2_000;
/** The pause (ms) between those transactions, for the runs waiting to commit. */
const CHUNK_PAUSE_MS = 5;

/** How far ahead of this machine's clock (ms) a check time may lie and still be taken for a run's (README "The result store"). */
const FUTURE_SLACK_MS = 86_400_000;

/** Whether a stored value is an entry of the store's (a check time and an answer). */
function isEntry(value: unknown): value is Entry {
  const { t, r } = (typeof value === 'object' && value !== null ? value : {}) as Partial<Entry>;
  return typeof t === 'number' && Number.isFinite(t) && typeof r === 'object' && r !== null;
}

function storeError(dir: string, cause: unknown): StoreError {
  return lmdbStoreError(dir, cause);
}
