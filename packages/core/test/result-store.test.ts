import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open as openLmdb } from 'lmdb';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, createSilentLogger } from '@dq/core';
import { ageProblem, openPgStore, openStore, parseAge, storeKey } from '@dq/core/store';
import type { Engine, EngineConfig } from '@dq/core';
import type { ResultStore } from '@dq/core/store';
import { startPostgres, type TestPostgres } from '@dq/test-support/pg';
import { addresses, batchAnswer, problem, startScriptedPlatform } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

const API_KEY = 'secret-key-7f3a9c';
let platform: ScriptedPlatform | undefined;
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await platform?.close();
  platform = undefined;
});

function start(url: string, resultStore: ResultStore | undefined, policy?: EngineConfig['policy']): Engine {
  const engine = createEngine({
    ...(policy ? { policy } : {}),
    mode: 'address',
    baseUrl: url,
    apiKey: API_KEY,
    rateLimits: { batch: 0 },
    threads: 0,
    retry: { maxAttempts: 2, baseDelayMs: 1 },
    logger: createSilentLogger(),
    resultStore,
  });
  cleanups.push(() => engine.close());
  return engine;
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-store-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('the embedded result store', () => {
  it('keys an entry by the SHA-256 of its request key, the digest every version has used', () => {
    // The digest of one request key, as stores of earlier versions hold it (createHash's chain).
    expect(storeKey('address\u0000Unter den Linden\u00001\u000010117\u0000Berlin\u0000DE')).toBe('k1suUscDfXL7W98zMXQeIo6CrL2FHWkjxNHqonaHY8g');
  });

  it('answers a later run from what an earlier one paid for, with the stored request id and check time', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'B'));
    const dir = join(await tempDir(), 'store');
    const first = start(platform.url, await openStore(dir));
    const paid = await first.process(addresses(20));
    await first.close();
    expect(platform.seen).toHaveLength(20);
    expect(paid.every((r) => r.source === 'api' && typeof r.checkedAt === 'string')).toBe(true);

    const second = start(platform.url, await openStore(dir));
    const again = await second.process(addresses(20));
    expect(platform.seen).toHaveLength(20); // no call
    expect(again.map((r) => ({ ...r, source: 'api' }))).toEqual(paid);
    expect(again.every((r) => r.source === 'store')).toBe(true);
    expect(second.report()).toMatchObject({ apiCalls: 0, callsSavedByStore: 20, storeLookups: 20, storeHits: 20, storeHitRate: 1 });
  });

  it("never answers a run against one platform with another platform's answers (the sandbox's for the real one); the same platform on another port shares them", async () => {
    const dir = join(await tempDir(), 'store');
    // The sandbox of a trial run: every address class A.
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const trial = start(platform.url, await openStore(dir));
    await trial.process(addresses(10));
    await trial.close();
    // The real platform, on another host: class D for the same addresses.
    const real = await startScriptedPlatform((req) => batchAnswer(req, 'D'), '127.0.0.2');
    cleanups.push(() => real.close());
    const production = start(real.url, await openStore(dir));
    const answers = await production.process(addresses(10));
    expect(real.seen).toHaveLength(10);
    expect(answers.map((a) => [a.source, a.resultClass])).toEqual(Array.from({ length: 10 }, () => ['api', 'D']));
    await production.close();
    // The first platform again, restarted on another port: its stored answers serve, no call.
    const restarted = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    cleanups.push(() => restarted.close());
    const again = start(restarted.url, await openStore(dir));
    expect((await again.process(addresses(10))).map((a) => [a.source, a.resultClass])).toEqual(Array.from({ length: 10 }, () => ['store', 'A']));
    expect(restarted.seen).toHaveLength(0);
  });

  it("gives a stored answer the status this run's policy gives its class, not the status of the run that bought it", async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'C'));
    const dir = join(await tempDir(), 'store');
    const lenient = start(platform.url, await openStore(dir));
    expect((await lenient.process(addresses(5))).map((r) => r.status)).toEqual(Array(5).fill('accepted'));
    await lenient.close();
    // A run that accepts only A and B: class C goes to review, from the store, without a call.
    const strict = start(platform.url, await openStore(dir), { C: 'review' });
    const answers = await strict.process(addresses(5));
    expect(answers.map((r) => [r.source, r.resultClass, r.status])).toEqual(Array(5).fill(['store', 'C', 'review']));
    expect(platform.seen).toHaveLength(5);
    expect(strict.report().byStatus).toMatchObject({ accepted: 0, review: 5 });
  });

  it('an engine closed while worker threads still run calls waits for them: every answer the platform gave is in the store', async () => {
    // Chunks of 2 on 2 threads; one chunk's answers take 1.5 s, the others' come at once: a worker
    // runs dry while the other is still calling.
    platform = await startScriptedPlatform((req) => ({ ...batchAnswer(req, 'A'), delayMs: String(req.body['street']).endsWith(' 7') ? 1500 : 50 }));
    const dir = join(await tempDir(), 'store');
    const store = (await openStore(dir))!;
    const engine = createEngine({
      mode: 'address',
      baseUrl: platform.url,
      apiKey: API_KEY,
      rateLimits: { batch: 0 },
      threads: 2,
      concurrency: 8,
      logger: createSilentLogger(),
      resultStore: store,
    });
    await engine.process(addresses(4, 100)); // both threads up: the next chunks are spread over them
    const running = engine.process(addresses(8)).catch(() => undefined);
    while (platform.seen.length < 12) await new Promise((r) => setTimeout(r, 5));
    await engine.close();
    await running;
    const reopened = (await openStore(dir))!;
    cleanups.push(() => reopened.close());
    expect(await reopened.info()).toMatchObject({ entries: 12 });
  });

  it("keeps no country-not-available answer (it depends on the account's plan and is not billed): a later run asks again", async () => {
    platform = await startScriptedPlatform((req) => (req.body['country'] === 'LI' ? problem(500, 'country-not-available') : batchAnswer(req, 'A')));
    const dir = join(await tempDir(), 'store');
    const records = [...addresses(2), { ...addresses(1, 50)[0]!, country: 'LI' }];
    const first = start(platform.url, await openStore(dir));
    expect((await first.process(records)).map((r) => r.status)).toEqual(['accepted', 'accepted', 'unsupported-country']);
    await first.close();
    const second = start(platform.url, await openStore(dir));
    expect((await second.process(records)).map((r) => [r.source, r.status])).toEqual([
      ['store', 'accepted'],
      ['store', 'accepted'],
      ['api', 'unsupported-country'],
    ]);
    expect(platform.seen.filter((s) => s.body['country'] === 'LI')).toHaveLength(2);
  });

  it('a store an earlier version filled opens as it is: its own record (no answer) is not counted, pruned or cleared', async () => {
    const dir = join(await tempDir(), 'store');
    await mkdir(dir, { recursive: true });
    const old = openLmdb({ path: join(dir, 'results.mdb'), compression: false, noSync: true, sharedStructuresKey: Symbol.for('structures') });
    // Checked a minute ago: prune(0) below removes it (an entry of this very millisecond it would keep).
    const aMinuteAgo = Date.now() - 60_000;
    await old.put(storeKey('scope\u0001street=A'), { t: aMinuteAgo, r: { status: 'accepted', resultClass: 'A', requestId: 'req-a' } });
    await old.put('.keys-with-platform', true);
    await old.close();
    const store = (await openStore(dir))!;
    cleanups.push(() => store.close());
    expect((await store.getMany(['scope\u0001street=A', 'scope\u0001street=B'])).get('scope\u0001street=A')?.requestId).toBe('req-a');
    expect(await store.info()).toMatchObject({ entries: 1 });
    expect(await store.prune(0)).toBe(1);
    expect(await store.info()).toMatchObject({ entries: 0 });
    expect(await store.clear()).toBe(0);
  });

  it('kill -9 the moment a batch returns: a rerun pays nothing for that batch', async () => {
    // Answers arrive one by one, each on its own: every burst is a write of its own.
    platform = await startScriptedPlatform(async (req) => {
      await new Promise((r) => setTimeout(r, 1));
      return batchAnswer(req, 'A');
    });
    const dir = join(await tempDir(), 'store');
    const records = addresses(40);
    // A connector that checkpoints the batch the moment it returns, and dies right after: the
    // child blocks its thread once the batch is back (nothing else of it runs), then is killed.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createEngine, createSilentLogger } from '@dq/core';
         import { openStore } from '@dq/core/store';
         import { writeSync } from 'node:fs';
         const engine = createEngine({ mode: 'address', baseUrl: ${JSON.stringify(platform.url)}, apiKey: 'k', rateLimits: { batch: 0 },
           threads: 0, concurrency: 4, logger: createSilentLogger(), resultStore: await openStore(${JSON.stringify(dir)}) });
         const results = await engine.process(${JSON.stringify(records)});
         writeSync(1, 'returned ' + results.length + '\\n');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);`,
      ],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('returned 40') && resolve());
      child.on('exit', (code) => reject(new Error(`the child exited ${code} before its batch returned: ${stderr}`)));
    });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(platform.seen).toHaveLength(40);

    const rerun = start(platform.url, await openStore(dir));
    const again = await rerun.process(records);
    expect(platform.seen).toHaveLength(40); // not one answer bought twice
    expect(again.every((r) => r.source === 'store' && r.status === 'accepted')).toBe(true);
  });

  it('keeps its files private and never holds the API key', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const dir = join(await tempDir(), 'a', 'store');
    const engine = start(platform.url, await openStore(dir));
    await engine.process(addresses(5));
    await engine.close();
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    for (const file of await readdir(dir)) {
      expect((await stat(join(dir, file))).mode & 0o777).toBe(0o600);
      expect((await readFile(join(dir, file))).includes(API_KEY)).toBe(false);
    }
  });

  it('stores field errors the platform answered, but not 5xx, 429 or a refused key', async () => {
    let refuse = false;
    let throttled = true;
    platform = await startScriptedPlatform((req) => {
      if (refuse) return problem(401, 'api-key-invalid');
      const street = String(req.body['street']);
      if (street === 'Street 1') return problem(400, 'field-error', { violations: [{ fieldName: 'houseNumber', message: 'not a house number' }] });
      if (street === 'Street 2') return { status: 503, body: '' };
      if (street === 'Street 3' && throttled) return { status: 429, body: '', headers: { 'retry-after': '0' } };
      return batchAnswer(req, 'A');
    });
    const dir = join(await tempDir(), 'store');
    const first = start(platform.url, await openStore(dir));
    const results = await first.process(addresses(3));
    expect(results.map((r) => r.status)).toEqual(['accepted', 'invalid-input', 'unavailable']);
    await first.close();
    const calls = platform.seen.length;

    const second = start(platform.url, await openStore(dir));
    // With a new input beside them: a run whose only call fails is an outage, not a record's failure.
    const again = await second.process([...addresses(3), ...addresses(1, 10)]);
    expect(again.map((r) => r.source)).toEqual(['store', 'store', 'api', 'api']);
    expect(again[1]?.error?.violations?.[0]?.fieldName).toBe('houseNumber');
    expect(platform.seen.length - calls).toBe(3); // Street 2 asked again (twice: maxAttempts 2), Street 10 once
    await second.close();

    // A call still refused with 429 after its retries stops the run (the account's rate limit is
    // used by something else), and stores nothing: the input is asked again next time.
    const limited = start(platform.url, await openStore(dir));
    await expect(limited.process(addresses(1, 3))).rejects.toMatchObject({ code: 'rate-limited', scope: 'run', retriable: true });
    await limited.close();
    throttled = false;
    const afterLimit = start(platform.url, await openStore(dir));
    const seenBefore = platform.seen.length;
    expect((await afterLimit.process(addresses(1, 3)))[0]).toMatchObject({ source: 'api', status: 'accepted' });
    expect(platform.seen.length - seenBefore).toBe(1);
    await afterLimit.close();

    // A refused key stops the run and stores nothing: the new input is asked again next time.
    refuse = true;
    const third = start(platform.url, await openStore(dir));
    await expect(third.process(addresses(1, 100))).rejects.toMatchObject({ code: expect.stringMatching(/key|credential|unauthor/i) });
    await third.close();
    refuse = false;
    const fourth = start(platform.url, await openStore(dir));
    const before = platform.seen.length;
    expect((await fourth.process(addresses(1, 100)))[0]?.source).toBe('api');
    expect(platform.seen.length - before).toBe(1);
  });

  it('calls again an answer older than the max age; max age 0 calls everything and still stores', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const dir = join(await tempDir(), 'store');
    const first = start(platform.url, await openStore(dir, { maxAgeMs: 0 }));
    await first.process(addresses(5));
    await first.close();
    const never = start(platform.url, await openStore(dir, { maxAgeMs: 0 }));
    await never.process(addresses(5));
    await never.close();
    expect(platform.seen).toHaveLength(10); // max age 0: nothing reused

    // What max age 0 wrote is there for a run that reuses.
    const young = start(platform.url, await openStore(dir, { maxAgeMs: 60_000 }));
    expect((await young.process(addresses(5))).every((r) => r.source === 'store')).toBe(true);
    await young.close();
    expect(platform.seen).toHaveLength(10);

    await new Promise((r) => setTimeout(r, 1_200));
    const aged = start(platform.url, await openStore(dir, { maxAgeMs: 1_000 }));
    expect((await aged.process(addresses(5))).every((r) => r.source === 'api')).toBe(true);
    expect(platform.seen).toHaveLength(15);
  });

  it('--store off is no store', async () => {
    expect(await openStore('off')).toBeUndefined();
  });

  it('plans after the store: stored inputs need no call', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const dir = join(await tempDir(), 'store');
    const first = start(platform.url, await openStore(dir));
    await first.process(addresses(10));
    await first.close();
    const second = start(platform.url, await openStore(dir));
    expect(await second.plan(addresses(15))).toEqual({ records: 15, distinct: 15, calls: 5, fromStore: 10, invalidInput: 0 });
  });

  it('shows its size, entries and age, prunes old entries and clears', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
    const dir = join(await tempDir(), 'store');
    const engine = start(platform.url, await openStore(dir));
    await engine.process(addresses(3));
    await new Promise((r) => setTimeout(r, 1_100));
    await engine.process(addresses(2, 10));
    await engine.close();
    const store = (await openStore(dir))!;
    cleanups.push(() => store.close());
    const info = await store.info();
    expect(info).toMatchObject({ location: dir, entries: 5 });
    expect(info.bytes).toBeGreaterThan(0);
    expect(Date.parse(info.newest!) - Date.parse(info.oldest!)).toBeGreaterThanOrEqual(1_000);
    expect(await store.prune(1_000)).toBe(3);
    expect((await store.info()).entries).toBe(2);
    expect(await store.clear()).toBe(2);
    expect((await store.info()).entries).toBe(0);
  });
});

describe('ages', () => {
  it('reads days, hours, minutes and seconds', () => {
    expect(parseAge('30d')).toBe(30 * 86_400_000);
    expect(parseAge('12h')).toBe(12 * 3_600_000);
    expect(parseAge('90m')).toBe(90 * 60_000);
    expect(parseAge('3600s')).toBe(3_600_000);
    // A number without a unit is refused but for 0: `--older-than 30` meant as days would remove
    // every answer older than 30 seconds.
    expect(parseAge('3600')).toBeUndefined();
    expect(parseAge('30')).toBeUndefined();
    expect(ageProblem('30')).toBe('"30" has no unit: write 30d for days, or 30h, 30m or 30s');
    expect(parseAge('0')).toBe(0);
    expect(parseAge('soon')).toBeUndefined();
    expect(parseAge('-1d')).toBeUndefined();
    // Past a century the cut-off is no date a Postgres store can compare with: not an age.
    expect(parseAge('36500d')).toBe(36_500 * 86_400_000);
    expect(parseAge('200000000d')).toBeUndefined();
  });
});

describe('the Postgres result store', () => {
  let server: TestPostgres;
  let url: string;
  beforeAll(async () => {
    server = await startPostgres();
    url = await server.createDatabase();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('shares answers between processes with one lookup per batch, and never shows the password', async () => {
    platform = await startScriptedPlatform((req) => batchAnswer(req, 'C'));
    const first = start(platform.url, await openStore(url));
    await first.process(addresses(50));
    await first.close();
    expect(platform.seen).toHaveLength(50);

    // A second process (its own pool), counting the queries it sends.
    const pool = new pg.Pool({ connectionString: url });
    const queries: string[] = [];
    const counting = {
      query: ((text: string, values?: unknown[]) => {
        queries.push(text);
        return pool.query(text, values);
      }) as pg.Pool['query'],
      end: () => pool.end(),
    };
    const store = await openPgStore({ db: counting, owned: true, location: 'counted', maxAgeMs: 86_400_000 });
    queries.length = 0;
    const second = start(platform.url, store);
    const again = await second.process(addresses(60));
    expect(platform.seen).toHaveLength(60); // only the 10 new inputs
    expect(again.filter((r) => r.source === 'store')).toHaveLength(50);
    expect(queries.filter((q) => /^\s*SELECT key, result FROM/.test(q))).toHaveLength(1);
    const upserts = queries.filter((q) => /INSERT INTO dq_store/.test(q)).length;
    expect(upserts).toBeGreaterThanOrEqual(1);
    expect(upserts).toBeLessThanOrEqual(10); // answers arriving together share an upsert

    const shown = (await openStore(url))!;
    cleanups.push(() => shown.close());
    expect(shown.location).not.toContain(new URL(url).password);
    expect((await shown.info()).entries).toBe(60);
  });

  it('a process whose store database stopped answering exits once it has closed the store, not when the database answers again', async () => {
    // The process: a write, then (once the database is frozen) a lookup that times out, the close
    // (which says goodbye to the idle connection as well), and nothing left to do.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { openStore } from '@dq/core/store';
         import { writeSync } from 'node:fs';
         const store = await openStore(${JSON.stringify(`${url}${url.includes('?') ? '&' : '?'}query_timeout=2000`)});
         await store.set('k-0', { status: 'accepted', resultClass: 'A', requestId: 'r-0', checkedAt: new Date().toISOString() });
         await Promise.all([store.getMany(['k-0']), store.getMany(['k-0'])]); // two connections: one for the lookup, one idle
         writeSync(1, 'ready\\n');
         await new Promise((resolve) => process.stdin.once('data', resolve));
         process.stdin.destroy();
         writeSync(1, (await store.getMany(['k-1']).then(() => 'found', (e) => e.code)) + '\\n');
         await store.close();
         writeSync(1, 'closed\\n');`,
      ],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const printed = (line: string) =>
      new Promise<number>((resolve, reject) => {
        const seen = () => stdout.includes(`${line}\n`) && resolve(Date.now());
        child.stdout.on('data', (d: Buffer) => {
          stdout += d.toString();
          seen();
        });
        seen();
        void exited.then(() => reject(new Error(`the child exited before printing ${line}: ${stdout} ${stderr}`)));
      });
    await printed('ready');
    const thaw = server.freeze(30_000);
    try {
      const frozenAt = Date.now();
      child.stdin.write('go\n');
      const closedAt = await printed('closed');
      expect(stdout).toContain('store-unreachable\n');
      expect(closedAt - frozenAt).toBeLessThan(15_000); // the lookup's 2 s, then at most 5 s for the close
      await exited;
      expect(Date.now() - closedAt).toBeLessThan(2_000); // no socket of the frozen server keeps it alive
    } finally {
      thaw();
    }
  });

  it('once the database stops answering, a later write or lookup fails at once instead of waiting out a timeout of its own', async () => {
    const store = (await openStore(`${url}${url.includes('?') ? '&' : '?'}query_timeout=2000`))!;
    cleanups.push(() => store.close());
    const answer = { status: 'accepted' as const, resultClass: 'A' as const, requestId: 'r-1', checkedAt: new Date().toISOString() };
    await store.set('k-0', answer);
    const thaw = server.freeze();
    try {
      const failure = (p: unknown) =>
        Promise.resolve(p).then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(await failure(store.getMany(['k-1']))).toMatchObject({ code: 'store-unreachable' }); // its query timed out
      const started = Date.now();
      expect(await failure(store.set('k-2', answer))).toMatchObject({ code: 'store-unreachable' });
      expect(await failure(store.getMany(['k-3']))).toMatchObject({ code: 'store-unreachable' });
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      thaw();
    }
  });
});
