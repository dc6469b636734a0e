import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PlatformError, RetriesExhaustedError } from '../src/index.js';
import { ChecksumMismatchError, DownloadClient } from '../src/download/index.js';
import type { EndpointId, Throttle } from '../src/throttle/index.js';
import { API_KEY, startDownloadServer, type TestServer } from './download-server.js';

// The rate budget hears of the end of every attempt the download client makes, once, as the
// transport's attempts do: when the answer's status and headers arrive (the platform counted the
// request before it answered), or when the attempt failed before them (refused, reset, timed
// out, aborted). A body still streaming, or one that breaks, stalls or is aborted, or a digest that
// does not match, changes nothing the platform counted: the lane is free meanwhile. A budget never
// told of an end holds that request's lane (the Postgres budget's, up to 10 s).

const root = mkdtempSync(join(tmpdir(), 'dq-download-budget-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ARTIFACT = '/download/v1/data/post/DE/release-v3/2026-11-01/DE_001.zip';
const body = randomBytes(256 * 1024 + 3);
const sha512 = (b: Buffer) => createHash('sha512').update(b).digest('hex');
const fast = { baseDelayMs: 1, maxDelayMs: 5 };

interface Event {
  kind: 'acquire' | 'ended';
  ticket: number;
  at: number;
}

/**
 * A budget of one lane, observable: a request takes the lane with its ticket, its end frees it.
 * Asking for a slot while the lane is still taken fails at once (naming the ticket never ended),
 * and so does an end told twice or for a ticket never handed out.
 */
function oneLaneBudget(): Throttle & { events: Event[]; busy: Set<number> } {
  const events: Event[] = [];
  const busy = new Set<number>();
  let next = 0;
  return {
    events,
    busy,
    acquire: async (_endpoint: EndpointId) => {
      if (busy.size > 0) throw new Error(`no lane free: ticket ${[...busy].join(', ')} was never ended`);
      const ticket = next++;
      busy.add(ticket);
      events.push({ kind: 'acquire', ticket, at: performance.now() });
      return ticket;
    },
    ended: (_endpoint, ticket) => {
      if (typeof ticket !== 'number' || !busy.delete(ticket)) throw new Error(`ticket ${String(ticket)} ended twice or never handed out`);
      events.push({ kind: 'ended', ticket, at: performance.now() });
    },
    backoff: () => undefined,
  };
}

/** Each ticket ended exactly once, before the next attempt took its ticket, and no lane is left taken; returns how long each attempt held its lane (ms). */
function expectEachEndedOnce(budget: ReturnType<typeof oneLaneBudget>, attempts: number): number[] {
  const { events } = budget;
  expect(events.map((e) => `${e.kind} ${e.ticket}`)).toEqual(Array.from({ length: attempts }, (_, i) => [`acquire ${i}`, `ended ${i}`]).flat());
  expect(budget.busy.size).toBe(0);
  return Array.from({ length: attempts }, (_, i) => (events[2 * i + 1] as Event).at - (events[2 * i] as Event).at);
}

async function until(what: () => boolean, ms = 5_000): Promise<void> {
  const stop = performance.now() + ms;
  while (!what()) {
    if (performance.now() > stop) throw new Error('waited in vain');
    await new Promise((r) => setTimeout(r, 5));
  }
}

let server: TestServer;
let budget: ReturnType<typeof oneLaneBudget>;
let client: DownloadClient;
let dest: string;
let seq = 0;

beforeEach(async () => {
  server = await startDownloadServer();
  server.files.set(ARTIFACT, { body });
  server.files.set(`${ARTIFACT}.sha512`, { body: Buffer.from(`${sha512(body)}  DE_001.zip\n`), auth: false, contentType: 'text/plain' });
  server.retryAfter = '0';
  budget = oneLaneBudget();
  client = new DownloadClient({ downloadUrl: server.url, apiKey: API_KEY, retry: fast, timeoutMs: 400, throttle: budget });
  dest = join(root, `d${++seq}`);
});
afterEach(async () => {
  await client.close();
  await server.close();
});

const download = (signal?: AbortSignal) => client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', ...(signal ? { signal } : {}) });

describe('the download client tells the rate budget of every attempt’s end, once', () => {
  it('a download and its checksum, answered at once', async () => {
    const { sha512: expected } = await client.fetchChecksum(ARTIFACT);
    const r = await client.download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: expected });
    expect(r.sha512).toBe(sha512(body));
    expectEachEndedOnce(budget, 2);
  });

  it('answers of any status, retried: 503, 429, then the file', async () => {
    server.faults.push('503', '429');
    const r = await download();
    expect(r.attempts).toBe(3);
    expectEachEndedOnce(budget, 3);
  });

  it('an error answer that is not retried (404) ends its attempt', async () => {
    const e = await client.download('/download/v1/data/post/DE/release-v3/2026-11-01/GONE.zip', { destDir: dest }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(PlatformError);
    expect((e as PlatformError).status).toBe(404);
    expectEachEndedOnce(budget, 1);
  });

  it('connections reset before any answer, then the file', async () => {
    server.faults.push('reset', 'reset');
    expect((await download()).attempts).toBe(3);
    expectEachEndedOnce(budget, 3);
  });

  it('a refused connection (nothing listens), every attempt of the retries', async () => {
    const url = server.url;
    await server.close();
    await client.close();
    client = new DownloadClient({ downloadUrl: url, apiKey: API_KEY, retry: { ...fast, maxAttempts: 3 }, timeoutMs: 400, throttle: budget });
    await expect(download()).rejects.toBeInstanceOf(RetriesExhaustedError);
    expectEachEndedOnce(budget, 3);
  });

  it('a timeout before the answer ends its attempt when the time is up', async () => {
    server.faults.push('hang');
    expect((await download()).attempts).toBe(2);
    const [timedOut] = expectEachEndedOnce(budget, 2);
    expect(timedOut).toBeGreaterThanOrEqual(390);
  });

  it('an abort before the answer ends the attempt at once', async () => {
    server.faults.push('hang');
    const controller = new AbortController();
    const done = download(controller.signal).catch((x: unknown) => x);
    await until(() => server.seen.length === 1);
    controller.abort(new Error('stopped by the test'));
    expect(await done).toBeInstanceOf(Error);
    expectEachEndedOnce(budget, 1);
  });

  it('a body cut off midway: the attempt ended when the answer began, the retry resumes after the bytes kept', async () => {
    server.faults.push('cut');
    const r = await download();
    expect(r.attempts).toBe(2);
    expect(r.resumedFrom).toBeGreaterThan(0);
    expectEachEndedOnce(budget, 2);
  });

  it('a body that stalls: its lane is free while the body is still awaited, and the timeout takes no second end', async () => {
    server.faults.push('stall');
    const done = download();
    await until(() => server.bytesSent > 0);
    await until(() => budget.events.length === 2, 300); // well before the 400 ms body timeout
    expect(budget.busy.size).toBe(0);
    expect((await done).attempts).toBe(2);
    expectEachEndedOnce(budget, 2);
  });

  it('an abort while the body streams takes no second end', async () => {
    server.files.set(ARTIFACT, { body, etag: '"v1"' }); // so a later download may resume the part
    server.faults.push('stall');
    const controller = new AbortController();
    // Aborted once the client itself has bytes (not when the server sent them: on a busy machine
    // they may still be on their way, and an abort then keeps nothing to resume from).
    let received = 0;
    const done = client
      .download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', signal: controller.signal, onProgress: (p) => (received = p.received) })
      .catch((x: unknown) => x);
    await until(() => received > 0);
    controller.abort(new Error('stopped by the test'));
    expect(await done).toBeInstanceOf(Error);
    expectEachEndedOnce(budget, 1);
    // the next download finds the lane free, and resumes after the bytes the aborted one kept
    expect((await download()).resumedFrom).toBeGreaterThan(0);
    expectEachEndedOnce(budget, 2);
  });

  it('a file whose SHA-512 does not match: one attempt, ended, nothing placed', async () => {
    const e = await client
      .download(ARTIFACT, { destDir: dest, fileName: 'DE_001.zip', expectedSha512: sha512(Buffer.from('another file')) })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ChecksumMismatchError);
    expect(existsSync(join(dest, 'DE_001.zip'))).toBe(false);
    expectEachEndedOnce(budget, 1);
  });
});
