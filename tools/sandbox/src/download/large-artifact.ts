/**
 * A large artifact (hundreds of MiB, for the download benchmark) that is never held in memory: a
 * real zip with one stored entry of deterministic noise, written once to a cache file under
 * `os.tmpdir()` and served from there. Its size is known before the file exists (the zip layout of
 * a stored entry is fixed), so `lookup` can answer synchronously while `ready()` generates.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { keyStream } from './content.js';

const CHUNK = 1024 * 1024; // generation step, bytes
const LFH = 30; // local file header without name
const CDH = 46; // central directory header without name
const EOCD = 22;
// Bump when the byte layout changes so stale cache files are not reused.
const FORMAT = 1;

/** A large generated artifact: its size now, its file and digest once `ready()` resolves. */
export interface LargeArtifact {
  /** Total size of the zip file in bytes. */
  readonly size: number;
  /** Generates the cache file on first call (later calls share it); resolves with path and SHA-512 hex. */
  ready(): Promise<{ file: string; sha512: string }>;
}

/**
 * Describes a large stored-entry zip. `key` identifies the content (seed and download path);
 * `dataBytes` is the entry's length (< 4 GiB: no zip64).
 */
export function largeArtifact(opts: { seed: number; key: string; entryName: string; dataBytes: number; cacheDir?: string }): LargeArtifact {
  const name = Buffer.from(opts.entryName, 'utf8');
  const size = opts.dataBytes + LFH + CDH + EOCD + 2 * name.length;
  if (opts.dataBytes >= 0xffffffff || size >= 0xffffffff) throw new RangeError('largeArtifactMiB must stay below 4096 (no zip64)');
  const dir = opts.cacheDir ?? join(tmpdir(), 'dq-sandbox-downloads');
  const id = createHash('sha256')
    .update(JSON.stringify([FORMAT, opts.seed, opts.key, opts.entryName, opts.dataBytes]))
    .digest('hex')
    .slice(0, 24);
  const file = join(dir, `${id}.zip`);
  let pending: Promise<{ file: string; sha512: string }> | undefined;
  return {
    size,
    ready() {
      pending ??= ensure(file, size, opts, name).catch((err: unknown) => {
        pending = undefined;
        throw err;
      });
      return pending;
    },
  };
}

async function ensure(file: string, size: number, opts: { seed: number; key: string; dataBytes: number }, name: Buffer) {
  const digestFile = `${file}.sha512`;
  try {
    const [st, sha512] = await Promise.all([stat(file), readFile(digestFile, 'utf8')]);
    if (st.size === size && /^[0-9a-f]{128}$/.test(sha512)) return { file, sha512 };
  } catch {
    // not cached yet
  }
  await mkdir(dirname(file), { recursive: true });
  // Pass 1: the CRC, needed in the local header before the data.
  let crc = 0;
  const ks1 = keyStream(opts.seed, opts.key);
  const zeros = Buffer.alloc(CHUNK);
  for (let left = opts.dataBytes; left > 0; left -= CHUNK) {
    crc = crc32(ks1.update(zeros.subarray(0, Math.min(CHUNK, left))), crc);
  }
  // Pass 2: write header, data, central directory while hashing; rename into place when whole.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const hash = createHash('sha512');
  const fh = await open(tmp, 'w');
  try {
    const write = async (buf: Buffer) => {
      hash.update(buf);
      await fh.write(buf);
    };
    await write(localHeader(name, crc, opts.dataBytes));
    const ks2 = keyStream(opts.seed, opts.key);
    for (let left = opts.dataBytes; left > 0; left -= CHUNK) {
      await write(ks2.update(zeros.subarray(0, Math.min(CHUNK, left))));
    }
    await write(centralDirectory(name, crc, opts.dataBytes));
    await fh.close();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  const sha512 = hash.digest('hex');
  await rename(tmp, file);
  const tmpDigest = `${digestFile}.${process.pid}.tmp`;
  await writeFile(tmpDigest, sha512);
  await rename(tmpDigest, digestFile);
  return { file, sha512 };
}

// Fixed DOS time/date (2026-01-01 03:00) so the bytes never depend on when they were generated.
const DOS_TIME = 3 << 11;
const DOS_DATE = ((2026 - 1980) << 9) | (1 << 5) | 1;

function localHeader(name: Buffer, crc: number, len: number): Buffer {
  const b = Buffer.alloc(LFH + name.length);
  b.writeUInt32LE(0x04034b50, 0);
  b.writeUInt16LE(20, 4); // version needed
  b.writeUInt16LE(0x0800, 6); // UTF-8 names
  b.writeUInt16LE(0, 8); // stored
  b.writeUInt16LE(DOS_TIME, 10);
  b.writeUInt16LE(DOS_DATE, 12);
  b.writeUInt32LE(crc >>> 0, 14);
  b.writeUInt32LE(len, 18);
  b.writeUInt32LE(len, 22);
  b.writeUInt16LE(name.length, 26);
  b.writeUInt16LE(0, 28);
  name.copy(b, LFH);
  return b;
}

function centralDirectory(name: Buffer, crc: number, len: number): Buffer {
  const b = Buffer.alloc(CDH + name.length + EOCD);
  b.writeUInt32LE(0x02014b50, 0);
  b.writeUInt16LE(20, 4); // version made by
  b.writeUInt16LE(20, 6);
  b.writeUInt16LE(0x0800, 8);
  b.writeUInt16LE(0, 10);
  b.writeUInt16LE(DOS_TIME, 12);
  b.writeUInt16LE(DOS_DATE, 14);
  b.writeUInt32LE(crc >>> 0, 16);
  b.writeUInt32LE(len, 20);
  b.writeUInt32LE(len, 24);
  b.writeUInt16LE(name.length, 28);
  // extra, comment, disk, internal attrs, external attrs stay 0
  b.writeUInt32LE(0, 42); // offset of the local header
  name.copy(b, CDH);
  const e = CDH + name.length;
  b.writeUInt32LE(0x06054b50, e);
  b.writeUInt16LE(1, e + 8);
  b.writeUInt16LE(1, e + 10);
  b.writeUInt32LE(CDH + name.length, e + 12);
  b.writeUInt32LE(LFH + name.length + len, e + 16);
  return b;
}
