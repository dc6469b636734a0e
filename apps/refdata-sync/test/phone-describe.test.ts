import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { buildPhoneValidator, describePhone, exitCodeFor, parseDuration } from '../src/index.js';
import { DEFAULT_API_KEY, sandboxWith } from './helpers.js';

let sandbox: Sandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

const DAY = 86_400_000;
const fast = { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 };
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const cacheFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'dq-phone-'));
  dirs.push(dir);
  return join(dir, 'cache', 'phone-describe.json');
};
/** Describe requests the sandbox answered (its `phone` endpoint counts analyses only). */
const describeCalls = (s: Sandbox) => s.stats().requests['phone-describe']?.total ?? 0;

describe('phone-describe cache', () => {
  it('fetches the description once and serves it from the cache while it is fresh', async () => {
    sandbox = await sandboxWith();
    const file = cacheFile();
    const first = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast });
    expect(first.source).toBe('service');
    expect(first.description.content[0]?.parameters.map((p) => p.name)).toEqual(['language', 'country', 'par_format', 'par_verbosity']);
    expect(JSON.parse(readFileSync(file, 'utf8')).fetchedAt).toBe(first.fetchedAt);
    const calls = describeCalls(sandbox);
    expect(calls).toBe(1);
    const second = await describePhone({
      realtimeUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      cacheFile: file,
      maxAgeMs: DAY,
      retry: fast,
      now: () => Date.now() + DAY / 2,
    });
    expect(second).toMatchObject({ source: 'cache', fetchedAt: first.fetchedAt });
    expect(second.ageMs).toBeGreaterThanOrEqual(DAY / 2 - 1000);
    expect(describeCalls(sandbox)).toBe(calls);
  });

  it('refreshes a cache older than --max-age from the service', async () => {
    sandbox = await sandboxWith();
    const file = cacheFile();
    const first = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast });
    const later = Date.now() + 2 * DAY;
    const again = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast, now: () => later });
    expect(again.source).toBe('service');
    expect(Date.parse(again.fetchedAt)).toBeGreaterThan(Date.parse(first.fetchedAt));
  });

  it('does not serve as fresh a cache dated in the future (the clock was put back, a copied or hand-edited file): asks the service', async () => {
    sandbox = await sandboxWith();
    const file = cacheFile();
    const first = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast });
    const calls = describeCalls(sandbox);
    expect(calls).toBe(1);
    const monthBack = Date.now() - 30 * DAY;
    const again = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast, now: () => monthBack });
    expect(again.source).toBe('service');
    expect(describeCalls(sandbox)).toBe(calls + 1);
    expect(Date.parse(again.fetchedAt)).toBe(monthBack);
    expect(Date.parse(again.fetchedAt)).toBeLessThan(Date.parse(first.fetchedAt));
    // Up to a minute ahead is clock skew between machines sharing the cache, and still fresh.
    const skewed = await describePhone({
      realtimeUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      cacheFile: file,
      maxAgeMs: DAY,
      retry: fast,
      now: () => monthBack - 30_000,
    });
    expect(skewed).toMatchObject({ source: 'cache', ageMs: 0 });
  });

  it('falls back to a stale cache with a warning when the service is down', async () => {
    sandbox = await sandboxWith();
    const file = cacheFile();
    const first = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast });
    sandbox.setFaults({ phone: { errorRate: 1 } });
    const stale = await describePhone({
      realtimeUrl: sandbox.url,
      apiKey: DEFAULT_API_KEY,
      cacheFile: file,
      maxAgeMs: DAY,
      retry: fast,
      now: () => Date.now() + 3 * DAY,
    });
    expect(stale).toMatchObject({ source: 'stale-cache', fetchedAt: first.fetchedAt });
    expect(stale.warning).toMatch(/phone describe service failed.*cached description/);
    expect(stale.description).toEqual(first.description);
  });

  it('fails with exit code 75 when the service is down and nothing is cached', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ phone: { errorRate: 1 } });
    const file = cacheFile();
    const err = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast }).catch(
      (e: unknown) => e,
    );
    expect(exitCodeFor(err)).toBe(75);
    expect(existsSync(file)).toBe(false);
  });

  it('fails at once with exit code 75 when a 429 asks to come back later than the retry policy waits', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ phone: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 3600 } });
    const started = Date.now();
    const err = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: cacheFile(), maxAgeMs: DAY, retry: fast }).catch(
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((err as Error).message).toMatch(/come back at/);
    expect(exitCodeFor(err)).toBe(75);
  });

  it('does not hide a refused API key behind the cache', async () => {
    sandbox = await sandboxWith();
    const file = cacheFile();
    await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: file, maxAgeMs: DAY, retry: fast });
    const err = await describePhone({
      realtimeUrl: sandbox.url,
      apiKey: 'wrong-key-123',
      cacheFile: file,
      maxAgeMs: 0,
      retry: fast,
      now: () => Date.now() + 1000,
    }).catch((e: unknown) => e);
    expect(exitCodeFor(err)).toBe(3);
  });

  it('reads --max-age in s, m, h and d', () => {
    expect(parseDuration('1d')).toBe(DAY);
    expect(parseDuration('12h')).toBe(DAY / 2);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('0')).toBe(0);
    // A number without a unit is not taken for seconds: `--max-age 1` meant as a day would fetch on every run.
    expect(() => parseDuration('90')).toThrow('--max-age: "90" has no unit: write 90d for days, or 90h, 90m or 90s');
    expect(() => parseDuration('soon')).toThrow(/--max-age/);
  });
});

describe('phone parameter validator built from the description', () => {
  it('checks Enum codes, String lengths and Numeric ranges, and applies defaults', async () => {
    sandbox = await sandboxWith();
    const { description } = await describePhone({ realtimeUrl: sandbox.url, apiKey: DEFAULT_API_KEY, cacheFile: cacheFile(), maxAgeMs: DAY, retry: fast });
    const v = buildPhoneValidator(description);
    expect(v.defaults).toEqual({ language: 'en', par_format: 'INTERNATIONAL', par_verbosity: 2 });
    expect(v.check({ country: 'DE', in_number: '+49 30 1234567' })).toEqual({
      ok: true,
      params: { country: 'DE', in_number: '+49 30 1234567', language: 'en', par_format: 'INTERNATIONAL', par_verbosity: 2 },
    });
    expect(v.check({ country: 'DE', language: 'fr', par_verbosity: '3' })).toMatchObject({ ok: true, params: { language: 'fr', par_verbosity: 3 } });
    const bad = v.check({ country: 'DEU', language: 'es', par_verbosity: 4, par_format: 'x'.repeat(33), par_colour: 'red' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.violations.map((x) => x.fieldName).sort()).toEqual(['country', 'language', 'par_colour', 'par_format', 'par_verbosity']);
      expect(bad.violations.find((x) => x.fieldName === 'language')?.message).toContain('de, en, fr');
      expect(bad.violations.find((x) => x.fieldName === 'par_verbosity')?.message).toContain('between 0 and 3');
    }
    expect(v.check({})).toMatchObject({ ok: false, violations: [{ fieldName: 'country' }] });
  });
});
