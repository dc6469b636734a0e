/**
 * The download API's client: verified, resumable downloads streamed to disk
 * with the SHA-512 computed in the same pass, checksums, version.txt, installers and software
 * packages named by their `Content-Disposition`.
 */
import { apiKeyProblem } from '../transport/api-key.js';
import { createHash } from 'node:crypto';
import { mkdir, statfs } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Dispatcher } from 'undici';
import { createAgent } from '../transport/agent.js';
import { DqError, LocalValidationError } from '../errors/dq-error.js';
import type { Violation } from '../errors/dq-error.js';
import { createSilentLogger, type Logger } from '../log/logger.js';
import { dataPath, installerPath, softwarePath, VERSION_FILE_PATH } from '../schemas/download.js';
import type { DataPathParts, SoftwarePathParts } from '../schemas/download.js';
import { meteredAttempt } from '../throttle/metered.js';
import type { Throttle } from '../throttle/types.js';
import { resolveRetryOptions, type RetryOptions } from '../transport/retry/policy.js';
import { retry } from '../transport/retry/retrier.js';
import { parseChecksumFile } from './checksum.js';
import { parseContentDisposition, safeFileName } from './content-disposition.js';
import { ChecksumMismatchError, DOWNLOAD_CODES, NoRoomError } from './errors.js';
import { classifyGetFailure, dump, get, text as bodyText, type GetRequest, type GetResponse, type MinProgress } from './http.js';
import { PartialFile } from './partial-file.js';
import { inlineHasher, Sha512Worker, type BlockHasher } from './sha512-hasher.js';

/** Options of {@link DownloadClient}. */
export interface DownloadClientOptions {
  /** Download API host, e.g. `https://download.example.com` (`{download_url}`). */
  downloadUrl: string;
  /** API key, sent as `Authorization: Bearer <key>` (not for `.sha512`); never logged. */
  apiKey?: string;
  /** Ms allowed for response headers and for any silence between body chunks (default 30 000). */
  timeoutMs?: number;
  /**
   * Least progress of a body: fewer than `bytes` in a window of `windowMs` (default 1024 bytes in
   * 60 000 ms) breaks it with a retriable `download-stalled`, so a server that trickles a byte now
   * and then, never silent for `timeoutMs`, cannot hold a download for ever; the retry resumes
   * after the bytes held. `false` turns the guard off.
   */
  minProgress?: MinProgress | false;
  /** Retry policy of the core retrier (default: 6 attempts, 15 minutes in total per file). */
  retry?: Partial<RetryOptions>;
  /**
   * Rate limiter consulted (endpoint `download`) before every attempt, told of the attempt's end
   * (when the answer's status and headers arrive, or it failed before them) and of every 429 (with
   * its `Retry-After`, capped by the retry policy) so that it slows every sender sharing it
   * (default: none).
   */
  throttle?: Throttle;
  /** Logger for retries and renamed files (default: silent). The API key is registered with its redactor. */
  logger?: Logger;
  /** undici dispatcher instead of an own keep-alive `Agent` (not closed by `close()`). */
  dispatcher?: Dispatcher;
  /**
   * Files of at least this many bytes are hashed on a worker thread, beside receiving and writing
   * (default 8 MiB; `Infinity` on a single CPU); smaller ones on the event loop. `Infinity` never
   * starts the thread.
   */
  offThreadHashMinBytes?: number;
}

/** Progress of one download. */
export interface DownloadProgress {
  /** Bytes of the file held so far, resumed part included. */
  received: number;
  /** Total size announced by the server, bytes. */
  total: number | undefined;
  /** Bytes that were already on disk when the current attempt started. */
  resumedFrom: number;
}

/** Options of one {@link DownloadClient.download}. */
export interface DownloadOptions {
  /** Directory the file is placed in (created if missing); the temporary part lives there too. */
  destDir: string;
  /** File name to place under; default: `Content-Disposition`'s name, sanitised, else the path's last segment. */
  fileName?: string;
  /** Lower- or upper-case hex SHA-512 the bytes must have; on mismatch nothing is placed. */
  expectedSha512?: string;
  /** Send the API key (default true). */
  auth?: boolean;
  signal?: AbortSignal;
  /** Called as bytes arrive (synchronously, per chunk: keep it cheap). */
  onProgress?: (p: DownloadProgress) => void;
  /**
   * Called with the file name once the bytes are verified, before anything in `destDir` is
   * replaced; when it throws, nothing is placed, the part is deleted and its error passed on (a
   * caller refuses a server name that another download already uses).
   */
  beforePlace?: (fileName: string) => void | Promise<void>;
}

/** A placed file. */
export interface DownloadResult {
  /** Absolute or `destDir`-relative path of the placed file. */
  path: string;
  fileName: string;
  /** Bytes. */
  size: number;
  /** Lower-case hex SHA-512 of the placed bytes. */
  sha512: string;
  /** Bytes taken from a part file left by an earlier attempt or run (0 when started afresh). */
  resumedFrom: number;
  /** Attempts made, the first included. */
  attempts: number;
  /** `X-Service-Request-Id` of the last answer, if any. */
  requestId: string | undefined;
  /** The name the server sent in `Content-Disposition`, when it was unsafe and was changed. */
  unsafeServerName?: string;
}

const DEFAULT_MIN_PROGRESS: MinProgress = { bytes: 1024, windowMs: 60_000 };
const DEFAULT_RETRY: Partial<RetryOptions> = { maxAttempts: 6, maxTotalMs: 15 * 60_000 };
const MAX_TEXT = 64 * 1024; // characters of a .sha512 or version.txt worth looking at
const OFF_THREAD_HASH_MIN = 8 * 1024 * 1024;

/**
 * What identifies the version of a file the server sent whole, for `If-Range` when it is resumed:
 * its strong `ETag`, or else its `Last-Modified` when that is at least a second before the answer's
 * `Date` (the only case in which a date is a strong validator, RFC 9110 8.8.2.2); otherwise none.
 */
function versionValidator(headers: Record<string, string | undefined>): string | undefined {
  const etag = headers['etag'];
  if (etag !== undefined && /^"[^"]*"$/.test(etag)) return etag;
  const modified = headers['last-modified'];
  const modifiedAt = Date.parse(modified ?? '');
  const sentAt = Date.parse(headers['date'] ?? '');
  return modified !== undefined && modifiedAt <= sentAt - 1000 ? modified : undefined;
}

/**
 * Throws {@link NoRoomError} (after giving the body up) when the file system of `dir` has fewer
 * free bytes, for this user, than `needed`; a file system that cannot say is not checked.
 */
async function ensureRoom(dir: string, needed: number, urlPath: string, body: GetResponse['body']): Promise<void> {
  const fs = await statfs(dir).catch(() => undefined);
  if (fs === undefined) return;
  const free = fs.bavail * fs.bsize;
  if (free >= needed) return;
  body.destroy();
  throw new NoRoomError({ urlPath, dir, needed, free });
}

function refuse(what: string, violations: Violation[]): never {
  throw new LocalValidationError(`${what} refused before any request: ${violations.map((v) => `${v.fieldName} ${v.message}`).join('; ')}`, violations);
}

/**
 * Client of the download API. One instance keeps one keep-alive connection pool and, once a large
 * file came, one hashing thread; `close()` it.
 */
export class DownloadClient {
  readonly #base: URL;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #minProgress: MinProgress | undefined;
  readonly #retry: Partial<RetryOptions>;
  /** The retry policy's cap on a `Retry-After`, passed on to the throttle too. */
  readonly #maxRetryAfterMs: number;
  readonly #throttle: Throttle | undefined;
  readonly #logger: Logger;
  readonly #dispatcher: Dispatcher;
  readonly #ownDispatcher: boolean;
  readonly #offThreadMin: number;
  readonly #hashWorker = new Sha512Worker();

  constructor(options: DownloadClientOptions) {
    let base: URL;
    try {
      base = new URL(options.downloadUrl);
    } catch {
      throw new TypeError(`downloadUrl must be an absolute URL; got "${options.downloadUrl}"`);
    }
    if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) throw new RangeError(`timeoutMs must be > 0; got ${options.timeoutMs}`);
    if (options.offThreadHashMinBytes !== undefined && !(options.offThreadHashMinBytes >= 0)) {
      throw new RangeError(`offThreadHashMinBytes must be >= 0; got ${options.offThreadHashMinBytes}`);
    }
    // On one CPU a second thread only adds hand-over costs.
    this.#offThreadMin = options.offThreadHashMinBytes ?? (availableParallelism() > 1 ? OFF_THREAD_HASH_MIN : Infinity);
    this.#base = base;
    const keyProblem = options.apiKey === undefined ? undefined : apiKeyProblem(options.apiKey);
    if (keyProblem !== undefined) throw new DqError(keyProblem, { code: 'config-invalid', retriable: false });
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    const min = options.minProgress ?? DEFAULT_MIN_PROGRESS;
    if (min !== false && !(Number.isInteger(min.bytes) && min.bytes > 0 && min.windowMs > 0)) {
      throw new RangeError(`minProgress must be { bytes: integer > 0, windowMs: > 0 } or false; got ${JSON.stringify(min)}`);
    }
    this.#minProgress = min === false ? undefined : min;
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#maxRetryAfterMs = resolveRetryOptions(this.#retry).maxRetryAfterMs;
    this.#throttle = options.throttle;
    this.#logger = options.logger ?? createSilentLogger();
    if (options.apiKey) this.#logger.redactor.add(options.apiKey);
    this.#ownDispatcher = options.dispatcher === undefined;
    this.#dispatcher = options.dispatcher ?? createAgent({ keepAliveTimeout: 10_000, connections: 8 });
  }

  /**
   * Downloads `urlPath` into `destDir`: streamed to a part file beside the target while hashing,
   * resumed with `Range` from what an interrupted attempt or run left, fsynced, and renamed onto
   * the target only when `expectedSha512` (if given) matches. Retries go through the core retrier.
   * A resumed file that does not match is fetched whole once more (the held part may be what is
   * damaged); then {@link ChecksumMismatchError} (code `checksum-mismatch`) on a digest mismatch.
   */
  async download(urlPath: string, options: DownloadOptions): Promise<DownloadResult> {
    await mkdir(options.destDir, { recursive: true });
    const key = createHash('sha256').update(urlPath).digest('hex').slice(0, 16);
    const hasher = (total: number | undefined): BlockHasher =>
      total !== undefined && total >= this.#offThreadMin ? this.#hashWorker.hasher() : inlineHasher();
    const part = new PartialFile({ partPath: join(options.destDir, `.dq-download-${key}.part`), urlPath, expectedSha512: options.expectedSha512, hasher });
    try {
      return await this.#fetchAndPlace(urlPath, options, part);
    } finally {
      part.release();
    }
  }

  async #fetchAndPlace(urlPath: string, options: DownloadOptions, part: PartialFile): Promise<DownloadResult> {
    const { destDir, signal, onProgress } = options;
    const url = this.#url(urlPath);
    const headers = this.#headers(options.auth ?? true);
    let attempts = 0;
    /** Whether bytes held before an attempt (from an earlier attempt or run) went into the file. */
    let resumed = false;
    const fetchAll = () =>
      retry(
        async () => {
          attempts++;
          // Before the slot is taken: hashing a part left by an earlier run may take a while.
          const held = await part.resumeOffset();
          let { offset, total: knownTotal } = held;
          const { validator } = held;
          if (offset > 0 && validator === undefined && options.expectedSha512 === undefined && !held.begunHere) {
            // Nothing ties the bytes an earlier run left to the file the server has now (no checksum
            // to verify the whole, no validator for If-Range): a file changed since, at the same
            // size, would come out as old bytes followed by new ones. Fetched whole instead.
            this.#logger.info(
              'download: the part an earlier run left cannot be checked against the server (no checksum, no ETag or Last-Modified); downloading it whole',
              {
                path: urlPath,
                held: offset,
              },
            );
            await part.reset();
            offset = 0;
            knownTotal = undefined;
          }
          const resumeHeaders = offset > 0 ? { range: `bytes=${offset}-`, ...(validator === undefined ? {} : { 'if-range': validator }) } : {};
          const req = {
            url,
            headers: { ...headers, ...resumeHeaders },
            dispatcher: this.#dispatcher,
            timeoutMs: this.#timeoutMs,
            minProgress: this.#minProgress,
            signal,
          };
          const res = await this.#get(req);
          let start = offset;
          if (offset > 0) resumed = true;
          const verifiable = options.expectedSha512 !== undefined;
          const total = await this.#checkResume(res, part, offset, knownTotal, validator, verifiable, urlPath);
          if (res.status === 416 && total !== undefined) return { res, total, resumedFrom: total }; // a previous attempt got every byte
          if (res.status === 200 && offset > 0) {
            await part.reset(); // the server ignored the Range: take the whole body
            start = 0;
          }
          if (total !== undefined) await ensureRoom(destDir, total - start, urlPath, res.body);
          if (start === 0) await part.begin(total, versionValidator(res.headers));
          try {
            await part.append(res.body, (received) => onProgress?.({ received, total, resumedFrom: start }));
          } catch (error) {
            throw classifyGetFailure(error, req, res.requestId);
          }
          // A whole file of unknown length (no Content-Length: chunked) ends where its body ends;
          // the checksum, when there is one, tells whether it is all of it.
          if (total === undefined) return { res, total: await part.size(), resumedFrom: 0 };
          const { offset: size } = await part.resumeOffset();
          if (size !== total) {
            throw new DqError(`GET ${urlPath}: body ended at ${size} of ${total} bytes [request id ${res.requestId ?? 'none'}]`, {
              code: DOWNLOAD_CODES.incompleteBody,
              retriable: true,
              requestId: res.requestId,
            });
          }
          return { res, total, resumedFrom: start };
        },
        {
          ...this.#retry,
          signal,
          onRetry: (e) => this.#logger.warn('download attempt failed; retrying', { path: urlPath, attempt: e.attempt, delayMs: e.delayMs, error: e.error }),
        },
      );
    let last = await fetchAll();
    let sha512 = await part.digest();
    const expected = options.expectedSha512?.toLowerCase();
    if (expected !== undefined && expected !== sha512 && resumed) {
      // The bytes held before (a part an earlier run left, possibly damaged on disk by a crash) may
      // be what is wrong, not the server's file: fetch it whole once more before blaming the server.
      this.#logger.warn('a resumed download does not match its checksum; downloading it again from the start', { path: urlPath });
      await part.reset();
      last = await fetchAll();
      sha512 = await part.digest();
    }
    const server = parseContentDisposition(last.res.headers['content-disposition'])?.filename;
    const fallback = urlPath.split('/').pop() ?? '';
    const named = options.fileName === undefined ? safeFileName(server, fallback) : { name: options.fileName, changed: false };
    if (named.changed && server !== undefined) {
      this.#logger.warn('unsafe file name from the server replaced', { path: urlPath, placedAs: named.name });
    }
    if (expected !== undefined && expected !== sha512) {
      await part.reset();
      throw new ChecksumMismatchError({ fileName: named.name, urlPath, expected, actual: sha512, requestId: last.res.requestId });
    }
    if (options.beforePlace !== undefined) {
      try {
        await options.beforePlace(named.name);
      } catch (e) {
        await part.reset();
        throw e;
      }
    }
    const target = join(destDir, named.name);
    await part.place(target);
    return {
      path: target,
      fileName: named.name,
      size: last.total,
      sha512,
      resumedFrom: last.resumedFrom,
      attempts,
      requestId: last.res.requestId,
      ...(named.changed && server !== undefined ? { unsafeServerName: server } : {}),
    };
  }

  /**
   * The total size from a 200/206/416 answer (undefined: a 200 that gave no `Content-Length`, a
   * chunked body, taken whole); resets the part and throws a retriable `range-mismatch` when the
   * server resumed elsewhere or its file changed size since the part began. A 416 saying the file
   * is exactly the bytes held counts as complete even when the first answer announced more (a
   * `Content-Length` overstated, the body closed early) if `verifiable`: the checksum decides.
   */
  async #checkResume(
    res: Awaited<ReturnType<typeof get>>,
    part: PartialFile,
    offset: number,
    knownTotal: number | undefined,
    validator: string | undefined,
    verifiable: boolean,
    urlPath: string,
  ): Promise<number | undefined> {
    const length = res.headers['content-length'];
    if (res.status === 200 && length === undefined) return undefined;
    const range = /^bytes (?:(\d+)-\d+|\*)\/(\d+)$/.exec(res.headers['content-range'] ?? '');
    const total = res.status === 200 ? Number(length) : Number(range?.[2] ?? NaN);
    const startedAt = Number(range?.[1] ?? NaN);
    const complete = res.status === 416 && total === offset && offset > 0;
    // A resumed file must still be the same size: otherwise the part holds bytes of another file.
    // A server that names the version it resumes (ETag) must name the one the part began with.
    const etag = res.headers['etag'];
    const sameVersion = res.status !== 206 || validator === undefined || !validator.startsWith('"') || etag === undefined || etag === validator;
    const sameFile = res.status === 200 || ((knownTotal === undefined || total === knownTotal || (complete && verifiable)) && sameVersion);
    if (Number.isFinite(total) && sameFile && (res.status === 200 || (res.status === 206 && startedAt === offset) || complete)) {
      if (res.status === 416) await dump(res.body).catch(() => undefined);
      return total;
    }
    await dump(res.body).catch(() => undefined);
    await part.reset();
    const asked = offset > 0 ? `a resume at byte ${offset}; starting over` : 'a request for the whole file; asking again';
    throw new DqError(
      `GET ${urlPath}: the server answered ${res.status} (${res.headers['content-range'] ?? 'no Content-Range'}) to ${asked} [request id ${res.requestId ?? 'none'}]`,
      {
        code: DOWNLOAD_CODES.rangeMismatch,
        retriable: true,
        requestId: res.requestId,
      },
    );
  }

  /** The expected SHA-512 of an artifact from its `.sha512` (the platform requires no authentication for it). */
  async fetchChecksum(artifactPath: string, options: { signal?: AbortSignal } = {}): Promise<{ sha512: string; requestId: string | undefined }> {
    const name = artifactPath.split('/').pop() ?? '';
    const { text, requestId } = await this.#text(`${artifactPath}.sha512`, false, options.signal);
    return { sha512: parseChecksumFile(text, name, `${artifactPath}.sha512`), requestId };
  }

  /** The current reference-data version from version.txt: `yyyy-mm-01` on its first line. */
  async fetchVersion(options: { signal?: AbortSignal } = {}): Promise<{ version: string; requestId: string | undefined }> {
    const { text, requestId } = await this.#text(VERSION_FILE_PATH, true, options.signal);
    const first = (text.split(/\r?\n/)[0] ?? '').trim();
    if (!/^\d{4}-(0[1-9]|1[0-2])-01$/.test(first)) {
      throw new DqError(
        `${VERSION_FILE_PATH} does not start with a yyyy-mm-01 version (first line "${first.slice(0, 40)}") [request id ${requestId ?? 'none'}]`,
        {
          code: DOWNLOAD_CODES.versionFileInvalid,
          retriable: false,
          requestId,
        },
      );
    }
    return { version: first, requestId };
  }

  /** Downloads a software package, named by its `Content-Disposition`; bad combinations are refused locally. */
  async downloadSoftware(parts: SoftwarePathParts, options: Omit<DownloadOptions, 'auth'>): Promise<DownloadResult> {
    const p = softwarePath(parts);
    if (!p.ok) refuse('software download', p.violations);
    return this.download(p.value, options);
  }

  /** Downloads a reference-data artifact and verifies it against its `.sha512`. */
  async downloadData(parts: DataPathParts, options: Omit<DownloadOptions, 'auth' | 'expectedSha512'>): Promise<DownloadResult> {
    const p = dataPath(parts);
    if (!p.ok) refuse('reference data download', p.violations);
    const { sha512 } = await this.fetchChecksum(p.value, { signal: options.signal });
    return this.download(p.value, { fileName: parts.artifact, ...options, expectedSha512: sha512 });
  }

  /** Downloads a reference-data installer by name, e.g. `setupRefdata_linux_x64.sh`. */
  async downloadInstaller(installer: string, options: Omit<DownloadOptions, 'auth'>): Promise<DownloadResult> {
    const p = installerPath(installer);
    if (!p.ok) refuse('installer download', p.violations);
    return this.download(p.value, { fileName: installer, ...options });
  }

  /** Closes the connection pool (when the client created it) and stops the hashing thread. */
  async close(): Promise<void> {
    await this.#hashWorker.close();
    if (this.#ownDispatcher) await this.#dispatcher.close();
  }

  async #text(urlPath: string, auth: boolean, signal: AbortSignal | undefined): Promise<{ text: string; requestId: string | undefined }> {
    const url = this.#url(urlPath);
    const headers = this.#headers(auth);
    return retry(
      async () => {
        const req = { url, headers, dispatcher: this.#dispatcher, timeoutMs: this.#timeoutMs, minProgress: this.#minProgress, signal };
        const res = await this.#get(req);
        let text: string;
        try {
          text = await bodyText(res.body);
        } catch (error) {
          throw classifyGetFailure(error, req, res.requestId);
        }
        return { text: text.slice(0, MAX_TEXT), requestId: res.requestId };
      },
      { ...this.#retry, signal },
    );
  }

  /**
   * One GET under the rate budget (endpoint `download`), metered like every attempt of the
   * transport: a slot before it is sent, and its end told to the budget the moment its status and
   * headers arrive (or it failed before them: refused, reset, timed out, aborted), so it frees its
   * share of the limit while the body is still coming. The platform counted the request before it
   * answered; nothing that happens to the body (a reset, a stall, an abort, a digest that does not
   * match) changes that. A 429 slows the budget for every sender of the endpoint and holds them
   * back until its `Retry-After`, capped by the retry policy, before the retrier waits and repeats.
   */
  #get(req: GetRequest): Promise<GetResponse> {
    return meteredAttempt(this.#throttle, { endpoint: 'download', signal: req.signal, maxHoldMs: this.#maxRetryAfterMs }, () => get(req));
  }

  #url(urlPath: string): URL {
    const base = this.#base.href.replace(/\/+$/, '');
    return new URL(base + (urlPath.startsWith('/') ? urlPath : `/${urlPath}`));
  }

  #headers(auth: boolean): Record<string, string> {
    return auth && this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {};
  }
}
