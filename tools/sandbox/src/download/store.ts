/**
 * The sandbox's download store: maps a GET path under `/download/v1/` to a file description and a
 * ranged byte stream. The HTTP server does authentication, Range parsing (206/416) and fault
 * injection around it; the store only knows what exists and what its bytes are.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, Transform, pipeline } from 'node:stream';
import { z } from 'zod';
import { resolvePath, type CatalogEntry } from './catalog.js';
import { entryBytes } from './content.js';
import { largeArtifact, type LargeArtifact } from './large-artifact.js';

const VERSION_RE = /^\d{4}-(0[1-9]|1[0-2])-01$/;
const LARGE_READ = 1024 * 1024; // bytes per read of a large artifact's stream

const optionsSchema = z.strictObject({
  seed: z.number().int().default(1),
  currentVersion: z.string().regex(VERSION_RE, 'must be yyyy-mm-01').default('2026-11-01'),
  versions: z.array(z.string().regex(VERSION_RE, 'must be yyyy-mm-01')).min(1).optional(),
  largeArtifact: z.string().min(1).default('DE_001.zip'),
  largeArtifactMiB: z.number().min(0).max(4000).default(0),
  contentDispositionOverride: z.string().optional(),
  corrupt: z.array(z.string()).default([]),
  cacheDir: z.string().optional(),
});

/** Options of {@link createDownloadStore}; every field is optional. */
export interface DownloadStoreOptions {
  /** Seed of the generated content (default 1): one seed, byte-identical files. */
  seed?: number;
  /** The version version.txt announces, `yyyy-mm-01` (default `2026-11-01`). */
  currentVersion?: string;
  /** Reference-data versions on offer (default: currentVersion and the two months before it). */
  versions?: string[];
  /** Artifact name (last path segment) that is served large when largeArtifactMiB > 0 (default `DE_001.zip`). */
  largeArtifact?: string;
  /** Size of the large artifact's payload in MiB (default 0: off, every file is small). */
  largeArtifactMiB?: number;
  /** Whole `Content-Disposition` value sent for every software package instead of the real one (hostile-name tests). */
  contentDispositionOverride?: string;
  /** Artifact names whose served bytes differ from what their `.sha512` says (one byte flipped). */
  corrupt?: string[];
  /** Where large artifacts are cached (default `<os.tmpdir()>/dq-sandbox-downloads`). */
  cacheDir?: string;
}

/** A file the store can serve. */
export interface DownloadFile {
  /** Whether the API key is required (false only for `.sha512` files). */
  auth: boolean;
  /** Size in bytes. */
  size: number;
  contentType: string;
  /** Set for software packages: `attachment; filename="<product>-<version>[-<platform>].zip"`. */
  contentDisposition?: string;
  /** Bytes `start`..`endInclusive` (0-based, as in a Range header); the caller checks the bounds. */
  read(start: number, endInclusive: number): NodeJS.ReadableStream;
  /**
   * Set for large artifacts: positioned reads into the caller's buffers, so a server can reuse a
   * few buffers instead of allocating one per chunk (hundreds of MiB of short-lived buffers make
   * V8 run full collections of the sandbox's large heap).
   */
  open?(): Promise<PositionedReader>;
}

/** Positioned reads of one open file (see {@link DownloadFile.open}); `close()` it. */
export interface PositionedReader {
  /** Reads up to `length` bytes at file offset `position` into `buffer` from its start; resolves with the count (0 at the end). */
  read(buffer: Buffer, length: number, position: number): Promise<number>;
  close(): Promise<void>;
}

/** The answer for a path that does not exist. */
export interface DownloadNotFound {
  notFound: true;
  message: string;
}

export interface DownloadStore {
  /** Resolves a request path (no query string) such as `/download/v1/data/post/version.txt`. */
  lookup(pathname: string): DownloadFile | DownloadNotFound;
}

function previousMonths(version: string, count: number): string[] {
  const [y, m] = version.split('-').map(Number) as [number, number];
  return Array.from({ length: count }, (_, i) => {
    const d = new Date(Date.UTC(y, m - 1 - i, 1));
    return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}-01`;
  });
}

function contentTypeOf(name: string): string {
  if (name.endsWith('.zip')) return 'application/zip';
  if (name.endsWith('.sh')) return 'application/x-sh';
  if (name.endsWith('.txt') || name.endsWith('.sha512')) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}

function artifactName(entry: CatalogEntry): string {
  return entry.kind === 'version' ? 'version.txt' : entry.artifact;
}

/** Flips the byte at `at` (an absolute file offset) in whatever part of the file passes through. */
function corruptor(start: number, at: number): Transform {
  let offset = start;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (at >= offset && at < offset + chunk.length) {
        chunk = Buffer.from(chunk);
        chunk[at - offset] = (chunk[at - offset] ?? 0) ^ 0xff;
      }
      offset += chunk.length;
      done(null, chunk);
    },
  });
}

/**
 * Creates the download store (contract 2.6, 4.4, 4.5). Throws a `TypeError` naming the option when
 * an option is invalid. Small files are generated on first use and kept in memory; the large
 * artifact is generated once into a cache file and streamed from disk.
 */
export function createDownloadStore(options: DownloadStoreOptions | Record<string, unknown> = {}): DownloadStore {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TypeError(`download store option ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
  }
  const o = parsed.data;
  const versions = o.versions ?? previousMonths(o.currentVersion, 3);
  const corrupt = new Set(o.corrupt);
  const small = new Map<string, { bytes: Buffer; sha512: string }>();
  const large = new Map<string, LargeArtifact>();

  const smallFile = (key: string, entry: CatalogEntry) => {
    let f = small.get(key);
    if (f === undefined) {
      const bytes = entryBytes(o.seed, entry, o.currentVersion);
      f = { bytes, sha512: createHash('sha512').update(bytes).digest('hex') };
      small.set(key, f);
    }
    return f;
  };
  const largeFile = (key: string, entry: CatalogEntry): LargeArtifact | undefined => {
    if (o.largeArtifactMiB <= 0 || entry.kind !== 'data' || entry.artifact !== o.largeArtifact) return undefined;
    let f = large.get(key);
    if (f === undefined) {
      const dir = entry.artifact.replace(/\.zip$/, '');
      f = largeArtifact({ seed: o.seed, key, entryName: `${dir}/${dir}.dat`, dataBytes: Math.round(o.largeArtifactMiB * 1024 * 1024), cacheDir: o.cacheDir });
      large.set(key, f);
    }
    return f;
  };

  return {
    lookup(pathname) {
      const r = resolvePath(pathname, versions);
      if ('notFound' in r) return { notFound: true, message: r.notFound };
      const { entry, checksum } = r;
      const key = checksum ? pathname.slice(0, -'.sha512'.length) : pathname;
      const name = artifactName(entry);
      const big = largeFile(key, entry);

      if (checksum) {
        // sha512sum format: "<128 hex digits>  <file name>\n"
        const size = 128 + 2 + Buffer.byteLength(name) + 1;
        const line = async () => `${big ? (await big.ready()).sha512 : smallFile(key, entry).sha512}  ${name}\n`;
        return {
          auth: false,
          size,
          contentType: contentTypeOf('.sha512'),
          read: (start, end) =>
            Readable.from(
              (async function* () {
                yield Buffer.from(await line()).subarray(start, end + 1);
              })(),
            ),
        };
      }

      const corruptAt = corrupt.has(name) ? undefined : -1;
      const contentDisposition = entry.kind === 'software' ? (o.contentDispositionOverride ?? `attachment; filename="${entry.fileName}"`) : undefined;
      const base = { auth: true, contentType: contentTypeOf(name), ...(contentDisposition === undefined ? {} : { contentDisposition }) };
      if (big) {
        const size = big.size;
        const flip = corruptAt ?? Math.floor(size / 2);
        return {
          ...base,
          size,
          read: (start, end) => {
            const s = Readable.from(
              (async function* () {
                const { file } = await big.ready();
                yield* createReadStream(file, { start, end, highWaterMark: LARGE_READ });
              })(),
              { objectMode: false },
            );
            if (flip < 0) return s;
            const t = corruptor(start, flip);
            pipeline(s, t, () => undefined); // an error in s destroys t, which the server sees
            return t;
          },
          open: async () => {
            const fh = await open((await big.ready()).file, 'r');
            return {
              async read(buffer, length, position) {
                const { bytesRead } = await fh.read(buffer, 0, length, position);
                if (flip >= position && flip < position + bytesRead) buffer[flip - position] = (buffer[flip - position] ?? 0) ^ 0xff;
                return bytesRead;
              },
              close: () => fh.close(),
            };
          },
        };
      }
      const { bytes } = smallFile(key, entry);
      const flip = corruptAt ?? Math.floor(bytes.length / 2);
      return {
        ...base,
        size: bytes.length,
        read: (start, end) => {
          let part = bytes.subarray(start, end + 1);
          if (flip >= start && flip <= end) {
            part = Buffer.from(part);
            part[flip - start] = (part[flip - start] ?? 0) ^ 0xff;
          }
          return Readable.from([part], { objectMode: false });
        },
      };
    },
  };
}
