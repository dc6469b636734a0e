import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CachedResult } from '@dq/core';
import { openResumeCache } from '../src/resume-cache.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => ({ dir, cleanup } = await tempDir()));
afterAll(async () => cleanup());

const result = (n: number): CachedResult => ({
  status: 'accepted', resultClass: 'A', requestId: `req-${n}`,
  address: { street: `Straße ${n}`, houseNumber: String(n), postalCode: '10115', locality: 'Berlin', country: 'DE' },
} as CachedResult);
const key = (n: number) => JSON.stringify(['address', `street=straße ${n}`, `housenumber=${n}`]);

describe('the resume cache', () => {
  it('reads an older result back from its file once it has left the in-memory results', async () => {
    const cache = await openResumeCache(join(dir, 'older.ndjson'), true, { hotEntries: 10 });
    // As the engine stores a chunk: all sets at once, then waits for them.
    // eslint-disable-next-line @typescript-eslint/await-thenable -- set() may return a promise (a ResultCache's may); waited for as the engine does
    await Promise.all(Array.from({ length: 500 }, (_, n) => cache.set(key(n), result(n))));
    expect(cache.size).toBe(500);
    for (const n of [0, 7, 250, 499]) expect(await cache.get(key(n))).toEqual(result(n));
    expect(await cache.get(key(500))).toBeUndefined();
    await cache.close();
  });

  it('writes the results stored together as whole lines, in the order stored', async () => {
    const path = join(dir, 'lines.ndjson');
    const cache = await openResumeCache(path, true);
    await Promise.all([cache.set(key(1), result(1)), cache.set(key(2), result(2))]);
    await cache.set(key(3), result(3));
    await cache.close();
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n').map((l) => JSON.parse(l) as { k: string; v: CachedResult });
    expect(lines.map((l) => l.k)).toEqual([key(1), key(2), key(3)]);
    expect(lines[2]?.v).toEqual(result(3));
  });

  it('finds what a killed run wrote when reopened, cutting off a torn last line', async () => {
    const path = join(dir, 'killed.ndjson');
    const first = await openResumeCache(path, true);
    // eslint-disable-next-line @typescript-eslint/await-thenable -- set() may return a promise (a ResultCache's may); waited for as the engine does
    await Promise.all([1, 2, 3].map((n) => first.set(key(n), result(n))));
    await first.close();
    await appendFile(path, '{"k":"[\\"address\\",\\"street=torn'); // the kill tore this line

    const resumed = await openResumeCache(path, false, { hotEntries: 1 });
    expect(resumed.size).toBe(3);
    expect(await resumed.get(key(2))).toEqual(result(2));
    await resumed.set(key(4), result(4));
    await resumed.close();
    const reopened = await openResumeCache(path, false);
    expect(await reopened.get(key(4))).toEqual(result(4));
    expect(await reopened.get(key(1))).toEqual(result(1));
    expect(reopened.size).toBe(4);
    await reopened.remove();
  });

  it('keeps its memory fixed: past its slots it forgets the least recently used results', async () => {
    const cache = await openResumeCache(join(dir, 'bounded.ndjson'), true, { maxEntries: 64, hotEntries: 1 });
    // eslint-disable-next-line @typescript-eslint/await-thenable -- set() may return a promise (a ResultCache's may); waited for as the engine does
    for (let n = 0; n < 1_000; n += 50) await Promise.all(Array.from({ length: 50 }, (_, i) => cache.set(key(n + i), result(n + i))));
    expect(cache.size).toBeLessThanOrEqual(64);
    expect(await cache.get(key(999))).toEqual(result(999));
    let found = 0;
    for (let n = 0; n < 1_000; n++) if ((await cache.get(key(n))) !== undefined) found += 1;
    expect(found).toBeLessThanOrEqual(64);
    await cache.remove();
  });
});
