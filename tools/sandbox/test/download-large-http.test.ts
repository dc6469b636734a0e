import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/index.js';

// The large artifact goes out through reused buffers (routes/download.ts, sendPooled), not the
// store's stream: these tests hold that path to the same bytes, ranges, corruption and truncation.
const KEY = 'large-http-key';
const PATH = '/download/v1/data/post/AT/release-v3/2026-11-01/AT_001.zip';
const cacheDir = mkdtempSync(join(tmpdir(), 'dq-sandbox-large-http-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

let sb: Sandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

async function start(download: Record<string, unknown> = {}, faults: Record<string, unknown> = {}): Promise<Sandbox> {
  sb = await startSandbox({
    seed: 3,
    config: { accounts: [{ id: 'a', apiKeys: [KEY] }], download: { largeArtifact: 'AT_001.zip', largeArtifactMiB: 5.5, cacheDir, ...download }, faults },
  });
  return sb;
}

async function get(s: Sandbox, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(s.url + path, { headers: { authorization: `Bearer ${KEY}`, ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const sha512 = (b: Buffer) => createHash('sha512').update(b).digest('hex');

describe('large artifact over HTTP', () => {
  it('sends the whole file with the digest its .sha512 announces and the length Content-Length promises', async () => {
    const s = await start();
    const sum = (await get(s, `${PATH}.sha512`)).bytes.toString().slice(0, 128);
    const whole = await get(s, PATH);
    expect(whole.status).toBe(200);
    expect(whole.bytes.length).toBe(Number(whole.headers.get('content-length')));
    expect(whole.bytes.length).toBeGreaterThan(5.5 * 1024 * 1024);
    expect(sha512(whole.bytes)).toBe(sum);
    // Twice in a row: buffers coming back from the pool carry no bytes of the previous answer.
    expect((await get(s, PATH)).bytes.equals(whole.bytes)).toBe(true);
  });

  it('answers a range that spans several buffers with exactly those bytes', async () => {
    const s = await start();
    const whole = (await get(s, PATH)).bytes;
    const from = 1_048_570;
    const part = await get(s, PATH, { range: `bytes=${from}-` });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes ${from}-${whole.length - 1}/${whole.length}`);
    expect(part.bytes.equals(whole.subarray(from))).toBe(true);
    const inner = await get(s, PATH, { range: 'bytes=3000000-3000009' });
    expect(inner.bytes.equals(whole.subarray(3_000_000, 3_000_010))).toBe(true);
  });

  it('sends a corrupted artifact at full size with one byte changed, in whole and in a range past it', async () => {
    const good = (await get(await start(), PATH)).bytes;
    await sb?.close();
    const s = await start({ corrupt: ['AT_001.zip'] });
    const bad = (await get(s, PATH)).bytes;
    expect(bad.length).toBe(good.length);
    const differing = [...bad.keys()].filter((i) => bad[i] !== good[i]);
    expect(differing).toHaveLength(1);
    const at = differing[0] ?? 0;
    expect((await get(s, PATH, { range: `bytes=${at - 5}-` })).bytes.equals(bad.subarray(at - 5))).toBe(true);
  });

  it('cuts the body short after half of it when a truncation fault is injected', async () => {
    const s = await start({}, { download: { truncateRate: 1 } });
    const res = await fetch(s.url + PATH, { headers: { authorization: `Bearer ${KEY}` } });
    const promised = Number(res.headers.get('content-length'));
    let received = 0;
    const reader = res.body?.getReader();
    let failed = false;
    try {
      for (;;) {
        const r = await reader?.read();
        if (r === undefined || r.done) break;
        received += r.value.length;
      }
    } catch {
      failed = true;
    }
    expect(failed).toBe(true);
    expect(received).toBe(Math.floor(promised / 2));
  });
});
