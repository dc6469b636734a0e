/**
 * `dq-refdata phone-describe`: the phone-analysis description kept in a cache file
 * with its fetch time; served from the cache within `--max-age`, refreshed after it, and taken from
 * a stale cache (with a warning) when the service fails.
 */
import { lstat, open, readFile, realpath, rename, mkdir, rm, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname } from 'node:path';
import { PhoneClient, createTransport, isRunStop } from '@dq/core';
import { PhoneDescribeSchema } from '@dq/core/schemas';
import { ageProblem, parseAge } from '@dq/core/store';
import type { Logger, PhoneDescribe, RetryOptions } from '@dq/core';
import { z } from 'zod';
import { TargetError, UsageError } from './errors.js';

/** Options of {@link describePhone}. */
export interface DescribeOptions {
  /** `{realtime_url}` of the real-time services. */
  realtimeUrl: string;
  apiKey: string;
  /** Cache file (JSON); created with its directory. */
  cacheFile: string;
  /** Age in ms up to which the cache is served without asking the service. */
  maxAgeMs: number;
  retry?: Partial<RetryOptions>;
  logger?: Logger;
  signal?: AbortSignal;
  /** Clock in ms since the epoch (default `Date.now`). */
  now?: () => number;
}

/** Where the description came from and how old it is. */
export interface DescribeOutcome {
  source: 'cache' | 'service' | 'stale-cache';
  /** ISO time the description was fetched from the service. */
  fetchedAt: string;
  ageMs: number;
  description: PhoneDescribe;
  /** Set for `stale-cache`: why the service could not be used. */
  warning?: string;
}

const cacheSchema = z.object({ fetchedAt: z.string(), realtimeUrl: z.string(), description: PhoneDescribeSchema });
type CacheFile = z.infer<typeof cacheSchema>;

/** How far a cache's fetch time may lie ahead of this machine's clock and still count as fresh. */
const MAX_CLOCK_SKEW_MS = 60_000;

/** `--max-age`: `30s`, `15m`, `12h`, `1d` (or `0`) → ms, read as every connector reads its `--max-age`. */
export function parseDuration(text: string): number {
  const ms = parseAge(text);
  if (ms === undefined) throw new UsageError(`--max-age: ${ageProblem(text)}`);
  return ms;
}

/** What a phone-describe cache looks like, whatever description it holds (also one an older version wrote). */
const cacheShape = z.object({ fetchedAt: z.string(), realtimeUrl: z.string(), description: z.looseObject({}) });

/** A phone-describe cache is a few KB; a larger file is something else and is not read into memory. */
const MAX_CACHE_BYTES = 4 * 1024 * 1024;

/** What an existing path is, for a message: a folder, a device, a socket … */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * What is at the cache path: `absent` (nothing there yet), or a cache this tool wrote, with the
 * path to write it at (a symbolic link's target: the link is kept). Anything else — a folder, a
 * device, a file that is not a phone-describe cache, such as a target's manifest.json or a
 * shell profile — is refused with exit 2 and left untouched (README "phone-describe").
 */
async function inspectCache(file: string): Promise<{ writeTo: string; json: unknown } | 'absent'> {
  const link = await lstat(file).catch(() => undefined);
  // Missing, or a path the write names precisely (a part of it not a folder, no permission).
  if (link === undefined) return 'absent';
  const other = 'give --cache (or --target) a new file name or an existing phone-describe cache';
  const advice = `it was left untouched: ${other}`;
  const st = link.isSymbolicLink() ? await stat(file).catch(() => undefined) : link;
  if (st === undefined) throw new UsageError(`the phone-describe cache ${file} is a symbolic link to nothing; ${advice}`);
  if (st.isDirectory()) {
    throw new TargetError(
      'target-not-writable',
      `cannot write the phone-describe cache ${file}: it is a folder (EISDIR); give --cache (or --target) a file in a writable folder, then run again`,
      undefined,
    );
  }
  if (!st.isFile()) throw new UsageError(`the phone-describe cache ${file} is ${kindOf(st)}, not a file dq-refdata wrote; ${advice}`);
  const notCache = (why: string) =>
    new UsageError(`${file} is not a phone-describe cache (${why}), so dq-refdata does not replace it: ${other} (or move the file away)`);
  if (st.size > MAX_CACHE_BYTES) throw notCache(`${st.size} bytes, far more than a cache holds`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    // What cannot be read cannot be told from someone else's file: never replaced unread.
    const code = (e as { code?: unknown }).code;
    throw new TargetError(
      'target-not-writable',
      `cannot read the phone-describe cache ${file} (${typeof code === 'string' ? code : (e as Error).message}), so it is left untouched; make it readable for this user, or ${other}`,
      e,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw notCache('not JSON');
  }
  if (!cacheShape.safeParse(json).success) throw notCache('JSON without the fetchedAt, realtimeUrl and description of a cache');
  return { writeTo: link.isSymbolicLink() ? await realpath(file) : file, json };
}

/** The cache's entry when it holds a description of `realtimeUrl` in today's shape. */
function usableCache(found: Awaited<ReturnType<typeof inspectCache>>, realtimeUrl: string): CacheFile | undefined {
  if (found === 'absent') return undefined;
  const parsed = cacheSchema.safeParse(found.json);
  return parsed.success && parsed.data.realtimeUrl === realtimeUrl ? parsed.data : undefined;
}

/** Writes the cache atomically; what is at `file` is checked again just before it is replaced. */
async function writeCache(file: string, content: CacheFile): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify(content));
      await fh.sync();
    } finally {
      await fh.close();
    }
    // The service may have taken minutes: anything but a cache put there meanwhile is refused too.
    await inspectCache(file);
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

const CACHE_FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/** Why the cache file could not be written, naming it and what to do; other errors unchanged. */
function cacheWriteError(file: string, e: unknown): unknown {
  const code = (e as { code?: unknown } | null | undefined)?.code;
  if (typeof code !== 'string') return e;
  const what = `cannot write the phone-describe cache ${file}`;
  const advice = 'give --cache (or --target) a file in a writable folder, then run again';
  if (CACHE_FULL.has(code)) return new TargetError('target-full', `${what}: the file system is full (${code}); free space or ${advice}`, e);
  const why =
    code === 'EEXIST' || code === 'ENOTDIR'
      ? `a part of its path is not a folder (${code})`
      : code === 'EISDIR'
        ? `it is a folder (${code})`
        : code === 'EROFS' || code === 'EACCES' || code === 'EPERM'
          ? `not writable (${code})`
          : undefined;
  return why === undefined ? e : new TargetError('target-not-writable', `${what}: ${why}; the description was fetched but not kept; ${advice}`, e);
}

/**
 * Returns the description from the cache while it is younger than `maxAgeMs`, else from the
 * service (and caches it). When the service fails for a reason a later call may not have
 * (unavailable, timeouts, 5xx), a stale cache is returned with a warning; credential refusals and
 * failures without any cache are thrown.
 */
export async function describePhone(o: DescribeOptions): Promise<DescribeOutcome> {
  const now = o.now ?? Date.now;
  // Before any request: a path that holds something else is refused, and never replaced.
  const found = await inspectCache(o.cacheFile);
  const writeTo = found === 'absent' ? o.cacheFile : found.writeTo;
  const cached = usableCache(found, o.realtimeUrl);
  const age = (c: CacheFile) => Math.max(0, now() - Date.parse(c.fetchedAt));
  // A fetch time later than now (beyond clock skew between machines sharing the cache) means the
  // clock was put back or the file was copied or edited: it says nothing about freshness, so the
  // service is asked (the entry still serves as a stale cache if the service fails).
  const fresh = (c: CacheFile) => Date.parse(c.fetchedAt) <= now() + MAX_CLOCK_SKEW_MS && age(c) <= o.maxAgeMs;
  if (cached !== undefined && fresh(cached)) {
    return { source: 'cache', fetchedAt: cached.fetchedAt, ageMs: age(cached), description: cached.description };
  }
  const transport = createTransport({
    baseUrl: o.realtimeUrl,
    realtimeUrl: o.realtimeUrl,
    apiKey: o.apiKey,
    ...(o.retry ? { retry: o.retry } : {}),
    ...(o.logger ? { logger: o.logger } : {}),
  });
  try {
    const res = await new PhoneClient(transport).describe(o.signal ? { signal: o.signal } : {});
    const entry: CacheFile = { fetchedAt: new Date(now()).toISOString(), realtimeUrl: o.realtimeUrl, description: res.data };
    await writeCache(writeTo, entry).catch((e: unknown) => {
      throw cacheWriteError(o.cacheFile, e);
    });
    return { source: 'service', fetchedAt: entry.fetchedAt, ageMs: 0, description: res.data };
  } catch (e) {
    if (cached === undefined || isRunStop(e) || o.signal?.aborted) throw e;
    const warning = `phone describe service failed (${(e as { code?: string }).code ?? 'error'}): ${(e as Error).message}; using the cached description from ${cached.fetchedAt}`;
    o.logger?.warn('using a stale phone description', { fetchedAt: cached.fetchedAt, error: e });
    return { source: 'stale-cache', fetchedAt: cached.fetchedAt, ageMs: age(cached), description: cached.description, warning };
  } finally {
    await transport.close();
  }
}
