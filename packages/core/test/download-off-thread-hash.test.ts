import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChecksumMismatchError, DownloadClient } from '../src/download/index.js';
import { API_KEY, startDownloadServer, type TestServer } from './download-server.js';

// The same guarantees as download-client.test.ts, with the digest computed on the worker thread:
// a 20 MiB file at the default threshold, and small files with the threshold at 0.
const root = mkdtempSync(join(tmpdir(), 'dq-download-hash-thread-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sha512 = (b: Buffer) => createHash('sha512').update(b).digest('hex');
const LARGE = '/download/v1/data/post/DE/release-v3/2026-11-01/DE_001.zip';
const SMALL = '/download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip';
const fast = { baseDelayMs: 1, maxDelayMs: 5 };
const large = randomBytes(20 * 1024 * 1024 + 4099);
const small = randomBytes(300 * 1024 + 5);

let server: TestServer;
let client: DownloadClient;
let dest: string;
let seq = 0;

beforeEach(async () => {
  server = await startDownloadServer();
  server.files.set(LARGE, { body: large });
  server.files.set(SMALL, { body: small });
  client = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 5_000 });
  dest = join(root, `d${++seq}`);
});
afterEach(async () => {
  await client.close();
  await server.close();
});

const leftovers = () => readdirSync(dest).filter((f) => f.startsWith('.dq-download-'));

describe('DownloadClient with the digest on a worker thread', () => {
  it('places a large file byte for byte with its SHA-512 and reports progress up to its size', async () => {
    let last = 0;
    const r = await client.download(LARGE, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(large), onProgress: (p) => (last = p.received) });
    expect(r).toMatchObject({ size: large.length, sha512: sha512(large), resumedFrom: 0, attempts: 1 });
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(large)).toBe(true);
    expect(last).toBe(large.length);
    expect(leftovers()).toEqual([]);
  });

  it('downloads two large files at once on one client without mixing their digests', async () => {
    const other = Buffer.from(large).reverse();
    server.files.set(SMALL, { body: other });
    const [a, b] = await Promise.all([
      client.download(LARGE, { destDir: dest, fileName: 'a.zip', expectedSha512: sha512(large) }),
      client.download(SMALL, { destDir: dest, fileName: 'b.zip', expectedSha512: sha512(other) }),
    ]);
    expect(a.sha512).toBe(sha512(large));
    expect(b.sha512).toBe(sha512(other));
    expect(readFileSync(join(dest, 'b.zip')).equals(other)).toBe(true);
  });

  it('resumes a large body cut short and carries the running digest over to the second attempt', async () => {
    server.faults.push('cut');
    const r = await client.download(LARGE, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(large) });
    expect(r.attempts).toBe(2);
    expect(r.resumedFrom).toBeGreaterThan(0);
    expect(server.seen[1]?.range).toBe(`bytes=${r.resumedFrom}-`);
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(large)).toBe(true);
  });

  it('resumes in a new client from the part an aborted run left, hashing that part on the thread first', async () => {
    server.faults.push('stall');
    const ac = new AbortController();
    const run1 = client.download(LARGE, {
      destDir: dest,
      fileName: 'DE_001.zip',
      expectedSha512: sha512(large),
      signal: ac.signal,
      onProgress: (p) => {
        if (p.received > 0) setTimeout(() => ac.abort(), 50);
      },
    });
    await expect(run1).rejects.toMatchObject({ code: 'aborted' });
    expect(leftovers().length).toBeGreaterThan(0);
    const second = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast });
    try {
      const r = await second.download(LARGE, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(large) });
      expect(r.resumedFrom).toBeGreaterThan(1024 * 1024);
      expect(r.sha512).toBe(sha512(large));
    } finally {
      await second.close();
    }
    expect(readFileSync(join(dest, 'DE_001.zip')).equals(large)).toBe(true);
    expect(leftovers()).toEqual([]);
  });

  it('refuses a large file whose digest does not match and places nothing', async () => {
    const wrong = 'ef'.repeat(64);
    const err = await client.download(LARGE, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: wrong }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChecksumMismatchError);
    expect((err as ChecksumMismatchError).actual).toBe(sha512(large));
    expect(existsSync(join(dest, 'DE_001.zip'))).toBe(false);
    expect(leftovers()).toEqual([]);
  });

  it('hashes small files on the thread too when the threshold is 0, including a resumed one', async () => {
    const eager = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, offThreadHashMinBytes: 0 });
    try {
      server.faults.push('cut');
      const r = await eager.download(SMALL, { destDir: dest, fileName: 'AT_001.zip', expectedSha512: sha512(small) });
      expect(r).toMatchObject({ attempts: 2, sha512: sha512(small) });
      expect(readFileSync(join(dest, 'AT_001.zip')).equals(small)).toBe(true);
    } finally {
      await eager.close();
    }
  });

  it('resumes a body whose connection closed before the client began reading it, keeping the bytes that came', async () => {
    // Half the file and a closed socket in one go: the break happens while the client is still
    // preparing the part file, before it reads the body.
    const ranges: (string | undefined)[] = [];
    const cutting = createServer((req, res) => {
      ranges.push(req.headers.range);
      const from = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
      const rest = small.subarray(from);
      res.writeHead(from > 0 ? 206 : 200, {
        'content-length': rest.length,
        ...(from > 0 ? { 'content-range': `bytes ${from}-${small.length - 1}/${small.length}` } : {}),
      });
      if (ranges.length > 1) {
        res.end(rest);
        return;
      }
      res.write(rest.subarray(0, rest.length >> 1), () => res.socket?.end());
    });
    await new Promise<void>((resolve) => cutting.listen(0, '127.0.0.1', resolve));
    const cutClient = new DownloadClient({ downloadUrl: `http://127.0.0.1:${(cutting.address() as AddressInfo).port}`, retry: fast, timeoutMs: 5_000 });
    try {
      const r = await cutClient.download(SMALL, { destDir: dest, fileName: 'AT_001.zip', expectedSha512: sha512(small) });
      expect(r).toMatchObject({ attempts: 2, sha512: sha512(small) });
      expect(r.resumedFrom).toBeGreaterThan(0);
      expect(ranges[1]).toBe(`bytes=${r.resumedFrom}-`);
    } finally {
      await cutClient.close();
      cutting.closeAllConnections();
      await new Promise<void>((resolve) => cutting.close(() => resolve()));
    }
  });

  it('refuses a negative threshold naming the option', () => {
    expect(() => new DownloadClient({ downloadUrl: server.url, offThreadHashMinBytes: -1 })).toThrow(/offThreadHashMinBytes/);
  });
});
