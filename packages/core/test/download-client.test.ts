import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger, DqError, LocalValidationError, PlatformError, RetriesExhaustedError } from '../src/index.js';
import { ChecksumMismatchError, DownloadClient } from '../src/download/index.js';
import { createSharedThrottle } from '../src/throttle/index.js';
import { API_KEY, SPLIT_TITLE, startDownloadServer, type TestServer } from './download-server.js';

const root = mkdtempSync(join(tmpdir(), 'dq-download-client-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sha512 = (b: Buffer) => createHash('sha512').update(b).digest('hex');
const ARTIFACT = '/download/v1/data/post/DE/release-v3/2026-11-01/DE_001.zip';
const fast = { baseDelayMs: 1, maxDelayMs: 5 };

let server: TestServer;
let client: DownloadClient;
let dest: string;
let seq = 0;
const body = randomBytes(3 * 1024 * 1024 + 17);

beforeEach(async () => {
  server = await startDownloadServer();
  server.files.set(ARTIFACT, { body });
  server.files.set(`${ARTIFACT}.sha512`, { body: Buffer.from(`${sha512(body)}  DE_001.zip\n`), auth: false, contentType: 'text/plain' });
  client = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 2_000 });
  dest = join(root, `d${++seq}`);
});
afterEach(async () => {
  await client.close();
  await server.close();
});

/** The name of the part file a download of `urlPath` grows in (DownloadClient's own naming). */
const partName = (urlPath: string) => `.dq-download-${createHash('sha256').update(urlPath).digest('hex').slice(0, 16)}.part`;
const leftovers = () => readdirSync(dest).filter((f) => f.startsWith('.dq-download-'));

describe('DownloadClient.download', () => {
  it('streams a file to disk with its SHA-512 and places it under the given name', async () => {
    const progress: number[] = [];
    const r = await client.download(ARTIFACT, {
      destDir: dest,
      fileName: 'DE_001.zip',
      expectedSha512: sha512(body).toUpperCase(),
      onProgress: (p) => progress.push(p.received),
    });
    expect(r).toMatchObject({ fileName: 'DE_001.zip', size: body.length, sha512: sha512(body), resumedFrom: 0, attempts: 1, requestId: 'req-1' });
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
    expect(progress.at(-1)).toBe(body.length);
    expect(server.seen[0]?.authorization).toBe(`Bearer ${API_KEY}`);
    expect(leftovers()).toEqual([]);
  });

  it('refuses a file whose digest does not match, naming the file and both digests, and places nothing', async () => {
    const wrong = 'ab'.repeat(64);
    const err = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: wrong }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChecksumMismatchError);
    const e = err as ChecksumMismatchError;
    expect(e.code).toBe('checksum-mismatch');
    expect(e.retriable).toBe(false);
    expect(e.message).toContain('DE_001.zip');
    expect(e.message).toContain(wrong);
    expect(e.message).toContain(sha512(body));
    expect(existsSync(join(dest, 'DE_001.zip'))).toBe(false);
    expect(leftovers()).toEqual([]);
  });

  it('keeps an existing good file when the replacement does not verify', async () => {
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip' });
    server.files.set(ARTIFACT, { body: Buffer.from('tampered') });
    await expect(client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: r.sha512 })).rejects.toMatchObject({
      code: 'checksum-mismatch',
    });
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
  });

  it('resumes a body cut short with a Range request and ends verified', async () => {
    server.faults.push('cut');
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
    expect(r.attempts).toBe(2);
    expect(r.resumedFrom).toBeGreaterThan(0);
    expect(server.seen[1]?.range).toBe(`bytes=${r.resumedFrom}-`);
    // The second request carried only the rest of the file.
    expect(server.bytesSent - Math.floor(body.length / 2)).toBe(body.length - r.resumedFrom);
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
  });

  it('resumes in a later run from the part an aborted run left, hashing that part first', async () => {
    server.faults.push('stall');
    const ac = new AbortController();
    const run1 = client.download(ARTIFACT, {
      destDir: dest,
      fileName: 'DE_001.zip',
      expectedSha512: sha512(body),
      signal: ac.signal,
      onProgress: (p) => {
        if (p.received > 0) setTimeout(() => ac.abort(), 50);
      },
    });
    await expect(run1).rejects.toMatchObject({ code: 'aborted' });
    expect(leftovers().length).toBeGreaterThan(0);
    const second = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast });
    try {
      const r = await second.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
      expect(r.resumedFrom).toBeGreaterThan(0);
      expect(r.sha512).toBe(sha512(body));
      expect(server.seen.at(-1)?.range).toBe(`bytes=${r.resumedFrom}-`);
    } finally {
      await second.close();
    }
    expect(leftovers()).toEqual([]);
  });

  it('breaks a body that trickles slower than the minimum progress and resumes it after the bytes held', async () => {
    const slow = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 2_000, minProgress: { bytes: 1024, windowMs: 400 } });
    try {
      server.faults.push('trickle');
      const r = await slow.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body), signal: AbortSignal.timeout(5_000) });
      expect(r.attempts).toBe(2);
      expect(r.resumedFrom).toBeGreaterThan(Math.floor(body.length / 2));
      expect(server.seen[1]?.range).toBe(`bytes=${r.resumedFrom}-`);
      expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);

      // A server that always trickles: a retriable download-stalled naming the URL, the bytes and the rate, without the key.
      server.faults.push('trickle', 'trickle');
      const once = new DownloadClient({
        downloadUrl: server.url,
        apiKey: API_KEY,
        retry: { ...fast, maxAttempts: 2 },
        minProgress: { bytes: 1024, windowMs: 400 },
      });
      const failed = await once.download(ARTIFACT, { destDir: join(dest, 'again'), signal: AbortSignal.timeout(5_000) }).then(
        () => undefined,
        (e: unknown) => e,
      );
      await once.close();
      expect(failed).toBeInstanceOf(RetriesExhaustedError);
      const cause = (failed as RetriesExhaustedError).cause as DqError;
      expect(cause).toMatchObject({ code: 'download-stalled', retriable: true });
      expect(cause.message).toMatch(
        new RegExp(
          `^GET ${server.url}${ARTIFACT}: the server sent \\d bytes in the last 400 ms \\(\\d+\\.\\d B/s; \\d+ bytes in this answer\\), less than the minimum of 1024 bytes per 400 ms`,
        ),
      );
      expect(String((failed as Error).message) + cause.message).not.toContain(API_KEY);
    } finally {
      await slow.close();
    }
  });

  it('starts over when the server ignores the Range and sends the whole file', async () => {
    server.faults.push('cut', 'ignore-range');
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
    expect(r.resumedFrom).toBe(0);
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
  });

  it('takes a whole file the server sends without Content-Length (chunked) and verifies it by its checksum', async () => {
    server.files.set(ARTIFACT, { body, chunked: true });
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
    expect(r).toMatchObject({ size: body.length, sha512: sha512(body), resumedFrom: 0, attempts: 1 });
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
    expect(leftovers()).toEqual([]);
  });

  it('downloads a chunked body cut short whole again, without Range (nothing tells how much of the file is held), and never speaks of a resume', async () => {
    server.files.set(ARTIFACT, { body, chunked: true });
    server.faults.push('cut');
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', write: (l) => warnings.push(l) });
    const c = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 2_000, logger });
    try {
      const r = await c.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
      expect(r).toMatchObject({ size: body.length, resumedFrom: 0, attempts: 2 });
    } finally {
      await c.close();
    }
    expect(server.seen.map((s) => s.range)).toEqual([undefined, undefined]);
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
    expect(warnings.join('\n')).not.toMatch(/resume at byte/);
  });

  it('takes the bytes held when a Content-Length was overstated (body closed early) and the server then says they are the whole file: verified by the checksum, fetched once', async () => {
    server.files.set(ARTIFACT, { body, overstateBy: 1000 });
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
    expect(r).toMatchObject({ size: body.length, sha512: sha512(body), attempts: 2 });
    expect(server.seen[1]?.range).toBe(`bytes=${body.length}-`);
    expect(server.bytesSent).toBe(body.length);
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
  });

  it('does not resume a part that belongs to another expected digest', async () => {
    server.faults.push('stall');
    const ac = new AbortController();
    await client
      .download(ARTIFACT, {
        destDir: dest,
        fileName: 'x.zip',
        expectedSha512: 'cd'.repeat(64),
        signal: ac.signal,
        onProgress: () => setTimeout(() => ac.abort(), 20),
      })
      .catch(() => undefined);
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
    expect(r.resumedFrom).toBe(0);
    expect(server.seen.at(-1)?.range).toBeUndefined();
  });

  it('starts over instead of mixing bytes when the file changed size since the part began', async () => {
    server.faults.push('stall');
    const ac = new AbortController();
    await client
      .download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', signal: ac.signal, onProgress: () => setTimeout(() => ac.abort(), 20) })
      .catch(() => undefined);
    const newer = randomBytes(body.length + 1000);
    server.files.set(ARTIFACT, { body: newer });
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip' });
    expect(r.resumedFrom).toBe(0);
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(newer)).toBe(true);
  });

  /** Leaves the part of a download without a checksum that an earlier run stopped halfway through. */
  async function leavePart(path = ARTIFACT): Promise<void> {
    server.faults.push('stall');
    const ac = new AbortController();
    await client
      .download(path, { destDir: dest, fileName: 'setup.sh', signal: ac.signal, onProgress: () => setTimeout(() => ac.abort(), 20) })
      .catch(() => undefined);
    expect(leftovers().length).toBeGreaterThan(0);
  }

  it('does not join the part an earlier run left to a file changed since at the same size, when nothing can tell (no checksum, no ETag)', async () => {
    await leavePart();
    const newer = randomBytes(body.length);
    server.files.set(ARTIFACT, { body: newer });
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'setup.sh' });
    expect(r.resumedFrom).toBe(0);
    expect(server.seen.at(-1)?.range).toBeUndefined();
    expect(readFileSync(join(dest, 'setup.sh')).equals(newer)).toBe(true);
    expect(leftovers()).toEqual([]);
  });

  it('resumes such a part with If-Range when the server gave an ETag, and takes a changed file whole', async () => {
    server.files.set(ARTIFACT, { body, etag: '"v1"' });
    await leavePart();
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'setup.sh' });
    expect(r.resumedFrom).toBeGreaterThan(0);
    expect(server.seen.at(-1)).toMatchObject({ range: `bytes=${r.resumedFrom}-`, ifRange: '"v1"' });
    expect(readFileSync(join(dest, 'setup.sh')).equals(body)).toBe(true);

    await leavePart();
    const newer = randomBytes(body.length);
    server.files.set(ARTIFACT, { body: newer, etag: '"v2"' });
    const again = await client.download(ARTIFACT, { destDir: dest, fileName: 'setup.sh' });
    expect(server.seen.at(-1)?.ifRange).toBe('"v1"'); // the server answered 200: the whole of v2
    expect(again.resumedFrom).toBe(0);
    expect(readFileSync(join(dest, 'setup.sh')).equals(newer)).toBe(true);
  });

  it('uses Last-Modified for If-Range when there is no ETag', async () => {
    const at = new Date('2026-11-01T00:00:00Z');
    server.files.set(ARTIFACT, { body, lastModified: at });
    await leavePart();
    const newer = randomBytes(body.length);
    server.files.set(ARTIFACT, { body: newer, lastModified: new Date('2026-11-02T00:00:00Z') });
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'setup.sh' });
    expect(server.seen.at(-1)?.ifRange).toBe(at.toUTCString());
    expect(r.resumedFrom).toBe(0);
    expect(readFileSync(join(dest, 'setup.sh')).equals(newer)).toBe(true);
  });

  it('still resumes within a run a body cut short when there is no checksum and no validator', async () => {
    server.faults.push('cut');
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'setup.sh' });
    expect(r.attempts).toBe(2);
    expect(r.resumedFrom).toBeGreaterThan(0);
    expect(readFileSync(join(dest, 'setup.sh')).equals(body)).toBe(true);
  });

  it('retries 503 answers through the core retrier and succeeds on the third call', async () => {
    server.faults.push('503', '503');
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip' });
    expect(r.attempts).toBe(3);
    expect(server.seen.length).toBe(3);
  });

  it('gives up with a non-retriable error that keeps the last cause when 5xx persist', async () => {
    server.faults.push('503', '503', '503');
    const c = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: { ...fast, maxAttempts: 3 } });
    const err = await c
      .download(ARTIFACT, { destDir: dest })
      .catch((e: unknown) => e)
      .finally(() => c.close());
    expect(err).toBeInstanceOf(RetriesExhaustedError);
    expect((err as RetriesExhaustedError).cause).toBeInstanceOf(PlatformError);
    expect(server.seen.length).toBe(3);
  });

  it('decodes an error body whole: a UTF-8 character split across two chunks comes out intact', async () => {
    server.faults = ['problem-split'];
    const err = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).status).toBe(404);
    expect((err as Error).message).toContain(SPLIT_TITLE);
    expect((err as Error).message).not.toContain('\uFFFD');
  });

  it('on a 429 slows the shared throttle: nobody sharing it sends before Retry-After; then the download is retried and placed', async () => {
    const throttle = createSharedThrottle({ limits: { download: 100 } });
    const a = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 5_000, throttle });
    const b = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 5_000, throttle });
    try {
      server.faults = ['429'];
      server.retryAfter = '2';
      const downloading = a.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
      // Wait until the 429 has reached client A's throttle (or give up after 500 ms), then let client B ask.
      const until = performance.now() + 500;
      while (throttle.currentRate('download') >= 99 && performance.now() < until) await new Promise((r) => setTimeout(r, 5));
      expect(throttle.currentRate('download')).toBeLessThan(99); // the endpoint's rate went down
      const checksum = b.fetchChecksum(ARTIFACT);
      const r = await downloading;
      await checksum;
      expect(r.attempts).toBe(2);
      expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
      const [first, ...later] = server.seen;
      expect(later.map((s) => s.path).sort()).toEqual([ARTIFACT, `${ARTIFACT}.sha512`]);
      for (const s of later) expect(s.at - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_900);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('stops at once on a Retry-After longer than the retry policy waits, and holds the shared throttle no longer than the policy allows', async () => {
    const throttle = createSharedThrottle({ limits: { download: 100 } });
    const a = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: { ...fast, maxRetryAfterMs: 300 }, timeoutMs: 5_000, throttle });
    const b = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 5_000, throttle });
    try {
      server.faults = ['429'];
      server.retryAfter = '3600';
      const started = performance.now();
      const err = (await a.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) }).catch((e: unknown) => e)) as DqError;
      expect(err).toBeInstanceOf(DqError);
      expect(err.code).toBe('retry-after-too-long');
      expect(err.scope).toBe('run');
      expect(err.message).toMatch(/come back at \d{4}-\d{2}-\d{2}T/);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(server.seen.length).toBe(1);
      // The other client sharing the throttle waits out the capped hold, not the hour.
      const r = await b.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
      expect(r.attempts).toBe(1);
      const [first, second] = server.seen;
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(250);
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeLessThan(5_000);
    } finally {
      await a.close();
      await b.close();
    }
  }, 20_000);

  it('never writes through a symbolic link under its part file name: the link is removed and the file placed is the download', async () => {
    mkdirSync(dest, { recursive: true });
    const outside = join(root, `outside-${seq}`);
    // A dangling link: writing through it would create the file out of the destination.
    symlinkSync(join(outside, 'DE_001.zip'), join(dest, partName(ARTIFACT)));
    mkdirSync(outside);
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
    expect(r.sha512).toBe(sha512(body));
    expect(readdirSync(outside)).toEqual([]);
    expect(lstatSync(join(dest, 'DE_001.zip')).isFile()).toBe(true);
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(body)).toBe(true);
    expect(leftovers()).toEqual([]);
  });

  it('does not wait for ever on a named pipe under its part or sidecar name: they are removed and the download placed', async () => {
    mkdirSync(dest, { recursive: true });
    execFileSync('mkfifo', [join(dest, partName(ARTIFACT)), join(dest, `${partName(ARTIFACT)}.json`)]);
    const download = client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(body) });
    const hung = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 10 s'), 10_000).unref());
    expect(await Promise.race([download.then((d) => d.sha512), hung])).toBe(sha512(body));
    expect(leftovers()).toEqual([]);
  });

  it('names a folder under its part file name and leaves it', async () => {
    mkdirSync(join(dest, partName(ARTIFACT)), { recursive: true });
    const err = (await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip' }).catch((e: unknown) => e)) as DqError;
    expect(err).toBeInstanceOf(DqError);
    expect(err.code).toBe('download-part-not-a-file');
    expect(err.message).toContain(join(dest, partName(ARTIFACT)));
    expect(existsSync(join(dest, 'DE_001.zip'))).toBe(false);
    expect(lstatSync(join(dest, partName(ARTIFACT))).isDirectory()).toBe(true);
  });

  it('sends a 404 exactly once and names the path', async () => {
    const err = await client.download('/download/v1/data/post/DE/release-v3/2026-11-01/DE_009.zip', { destDir: dest }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).status).toBe(404);
    expect((err as PlatformError).message).toContain('DE_009.zip');
    expect(server.seen.length).toBe(1);
  });

  it('reports a refused API key as a run stop without showing the key', async () => {
    const c = new DownloadClient({ downloadUrl: server.url, apiKey: 'wrong-key-XYZ' });
    const err = (await c
      .download(ARTIFACT, { destDir: dest })
      .catch((e: unknown) => e)
      .finally(() => c.close())) as DqError;
    expect(err.code).toBe('api-key-invalid');
    expect(err.scope).toBe('run');
    expect(JSON.stringify({ m: err.message, s: err.stack })).not.toContain('wrong-key-XYZ');
  });
});

describe('DownloadClient naming, checksums and versions', () => {
  it('names a software package after its Content-Disposition, preferring filename*', async () => {
    const path = '/download/v1/software/software-bundle/latest/linux/software-bundle.zip';
    server.files.set(path, { body, contentDisposition: `attachment; filename="fallback.zip"; filename*=UTF-8''software-bundle-3.4.1-linux.zip` });
    const r = await client.downloadSoftware({ product: 'software-bundle', platform: 'linux', artifact: 'software-bundle.zip' }, { destDir: dest });
    expect(r.fileName).toBe('software-bundle-3.4.1-linux.zip');
    expect(r.unsafeServerName).toBeUndefined();
    expect(existsSync(join(dest, 'software-bundle-3.4.1-linux.zip'))).toBe(true);
  });

  it('neutralises a hostile Content-Disposition name and keeps the file inside the target', async () => {
    const path = '/download/v1/software/uws/latest/linux/uws.zip';
    server.files.set(path, { body, contentDisposition: 'attachment; filename="../../etc/x"' });
    const r = await client.downloadSoftware({ product: 'uws', platform: 'linux', artifact: 'uws.zip' }, { destDir: dest });
    expect(r.fileName).toBe('x');
    expect(r.unsafeServerName).toBe('../../etc/x');
    expect(r.path).toBe(join(dest, 'x'));
    expect(readdirSync(dest)).toEqual(['x']);
  });

  it('refuses uws for windows before any request', async () => {
    const err = await client.downloadSoftware({ product: 'uws', platform: 'windows', artifact: 'uws.zip' }, { destDir: dest }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LocalValidationError);
    expect((err as LocalValidationError).violations[0]?.fieldName).toBe('platform');
    expect(server.seen.length).toBe(0);
  });

  it('fetches a checksum without credentials and verifies a data download against it', async () => {
    const r = await client.downloadData(
      { product: 'post', country: 'DE', release: 'release-v3', version: '2026-11-01', artifact: 'DE_001.zip' },
      { destDir: dest },
    );
    expect(r.sha512).toBe(sha512(body));
    expect(r.fileName).toBe('DE_001.zip');
    expect(server.seen[0]).toMatchObject({ path: `${ARTIFACT}.sha512`, authorization: undefined });
  });

  it('rejects a checksum file that is not in sha512sum format or names another file', async () => {
    server.files.set(`${ARTIFACT}.sha512`, { body: Buffer.from('<html>oops</html>'), auth: false });
    await expect(client.fetchChecksum(ARTIFACT)).rejects.toMatchObject({ code: 'checksum-file-invalid' });
    server.files.set(`${ARTIFACT}.sha512`, { body: Buffer.from(`${sha512(body)}  AT_001.zip\n`), auth: false });
    await expect(client.fetchChecksum(ARTIFACT)).rejects.toMatchObject({ code: 'checksum-file-invalid' });
  });

  it('reads the version from the first line of version.txt', async () => {
    server.files.set('/download/v1/data/post/version.txt', { body: Buffer.from('2026-11-01\nbuild 7\n') });
    await expect(client.fetchVersion()).resolves.toMatchObject({ version: '2026-11-01' });
    server.files.set('/download/v1/data/post/version.txt', { body: Buffer.from('November\n') });
    await expect(client.fetchVersion()).rejects.toMatchObject({ code: 'version-file-invalid' });
  });
});
