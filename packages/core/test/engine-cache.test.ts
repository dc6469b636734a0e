import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, createMemoryCache, createSilentLogger } from '@dq/core';
import type { CachedResult, Engine, ResultCache } from '@dq/core';
import { addresses, batchAnswer, startScriptedPlatform } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

let platform: ScriptedPlatform | undefined;
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await platform?.close();
  platform = undefined;
});

function start(url: string, cache: ResultCache): Engine {
  const engine = createEngine({
    mode: 'address',
    baseUrl: url,
    apiKey: 'k',
    rateLimits: { batch: 0 },
    retry: { maxAttempts: 2, baseDelayMs: 1 },
    logger: createSilentLogger(),
    cache,
  });
  cleanups.push(() => engine.close());
  return engine;
}

const accepted: CachedResult = { status: 'accepted', resultClass: 'A' };

describe('result caches', () => {
  it('evicts the least recently used entry of the memory cache beyond its bound', () => {
    const cache = createMemoryCache({ maxEntries: 2 });
    void cache.set('a', accepted);
    void cache.set('b', accepted);
    expect(cache.get('a')).toEqual(accepted); // a is now the most recent
    void cache.set('c', accepted);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual(accepted);
    expect(cache.get('c')).toEqual(accepted);
  });

  it('keeps a hit entry of a larger memory cache through the next half of its bound of insertions', () => {
    const cache = createMemoryCache({ maxEntries: 100 });
    for (let i = 0; i < 100; i++) void cache.set(`k${i}`, accepted);
    // k0 is the oldest and in the older half: a hit moves it to the back.
    expect(cache.get('k0')).toEqual(accepted);
    for (let i = 100; i < 199; i++) void cache.set(`k${i}`, accepted);
    expect(cache.get('k0')).toEqual(accepted);
    expect(cache.get('k1')).toBeUndefined();
    // Never hit again: 100 more insertions evict it.
    for (let i = 199; i < 300; i++) void cache.set(`k${i}`, accepted);
    expect(cache.get('k0')).toBeUndefined();
    expect(cache.get('k299')).toEqual(accepted);
  });

  it('works with an asynchronous cache', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const store = new Map<string, CachedResult>();
    const slow: ResultCache = {
      get: async (key) => {
        await new Promise((r) => setTimeout(r, 1));
        return store.get(key);
      },
      set: async (key, value) => {
        await new Promise((r) => setTimeout(r, 1));
        store.set(key, value);
      },
    };
    const engine = start(platform.url, slow);
    await engine.process(addresses(5));
    expect(store.size).toBe(5);
    const again = await engine.process(addresses(5));
    expect(again.every((r) => r.source === 'cache')).toBe(true);
    expect((await engine.plan(addresses(5))).calls).toBe(0); // the plan asks an asynchronous cache too
    expect(platform.seen).toHaveLength(5);
  });

  it('hands back every field of a cached result, with source "cache", and sends nothing', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const candidate = { street: 'Hauptstr.', houseNumber: '1', postalCode: '10117', locality: 'Berlin', country: 'DE' };
    // Every field a cached result can have, whatever the mode: none may be lost on the way out.
    const full: Required<CachedResult> = {
      status: 'review',
      resultClass: 'E',
      address: candidate,
      candidates: [candidate, { ...candidate, houseNumber: '1a' }],
      company: { id: 'c-1', company: 'Muster GmbH', searchScore: 0.98 },
      companies: [
        { id: 'c-1', company: 'Muster GmbH', searchScore: 0.98 },
        { id: 'c-2', company: 'Muster AG', searchScore: 0.71 },
      ],
      hits: 2,
      vatCode: 'VALID_VAT_ID',
      requestId: 'req-1',
      checkedAt: '2026-01-02T03:04:05.000Z',
      error: { code: 'x', message: 'y' },
    };
    const engine = start(platform.url, { get: () => full, set: () => undefined });
    const results = await engine.process(addresses(3));
    expect(results).toEqual([1, 2, 3].map(() => ({ ...full, source: 'cache' })));
    expect(platform.seen).toHaveLength(0);
  });
});
