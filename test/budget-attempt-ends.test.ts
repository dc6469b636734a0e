import { DEFAULT_API_KEY } from '@dq/sandbox';
import { DqError } from '@dq/core/errors';
import { createPgThrottle, type PgThrottle } from '@dq/core/throttle-pg';
import { createTransport, type Transport } from '@dq/core/transport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '@dq/test-support/pg';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { bestOf } from '@dq/test-support/timing';
import { startSlowPath } from './slow-path.js';

// The rate budget hears of the end of every attempt, whatever ended it (docs/architecture.md, "The
// rate budget and the spending cap"): a request that failed without an answer (a reset, a refused
// connection, a timeout) frees its lane of the account's Postgres budget at once, so the account
// gets its whole rate back as soon as the platform is back, and still counts against the rate, so
// the pacing stays within the platform's strict limit.

const BATCH = '/location/v1/validate/batch/sync';

let server: TestPostgres;
let db: string;
beforeAll(async () => {
  server = await startPostgres();
  db = await server.createDatabase();
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

interface Outcome {
  /** When the attempt ended (performance.now()). */
  at: number;
  kind: 'ok' | '429' | 'timeout' | 'failed';
}

/**
 * `concurrency` loops sending batch/sync requests through `transport`, one attempt each (no
 * retries: the loop sends the next at once), until `stop()`; records how each attempt ended.
 */
function drive(transport: Transport, concurrency: number) {
  const outcomes: Outcome[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      const id = `r${n++}`;
      let kind: Outcome['kind'] = 'ok';
      try {
        await transport.request({
          endpoint: 'batch',
          method: 'POST',
          path: BATCH,
          body: { street: 'Lindenweg', houseNumber: String(n), postalCode: '10115', locality: 'Berlin', country: 'DE', customerAddressId: id },
          retry: false,
        });
      } catch (e) {
        kind = e instanceof DqError && e.status === 429 ? '429' : e instanceof DqError && e.code === 'timeout' ? 'timeout' : 'failed';
      }
      outcomes.push({ at: performance.now(), kind });
    }
  });
  return {
    outcomes,
    async stop(): Promise<Outcome[]> {
      running = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

const count = (outcomes: Outcome[], kind: Outcome['kind'], from = -Infinity, to = Infinity): number =>
  outcomes.filter((o) => o.kind === kind && o.at >= from && o.at < to).length;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setFaults(sandbox: SandboxProcess, faults: object): Promise<void> {
  const res = await fetch(`${sandbox.url}/__admin/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) });
  expect(res.status).toBe(200);
}

async function batchStatuses(sandbox: SandboxProcess): Promise<Record<string, number>> {
  return (await sandbox.stats()).requests['batch']?.byStatus ?? {};
}

describe('the shared budget hears of every attempt’s end', () => {
  it.each(['every connection reset', 'every answer held past the timeout'])(
    'after an outage (%s), two processes of the account are back at the limit within a second of recovery, not 10 s later, with no 429',
    async (kind) => {
      const LIMIT = 20;
      const sandbox = await startSandboxProcess({ accounts: [{ id: 'acct', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: LIMIT } }] });
      const resets = kind === 'every connection reset';
      // The timeouts: the sandbox counts each request at once, the answers do not come back in time.
      let holding = false;
      const path = await startSlowPath(sandbox.url, () => ({ lateMs: 0, withhold: holding }));
      const outage = async (on: boolean): Promise<void> => {
        if (resets) await setFaults(sandbox, on ? { batch: { resetRate: 1 } } : {});
        else holding = on;
      };
      let n = 0;
      try {
        // A loaded machine may lose any one attempt some of its rate; a budget still holding the
        // lanes of the failed requests sends next to nothing in the measured seconds on every one.
        const { results, fast } = await bestOf(
          3,
          async () => {
            await fetch(`${sandbox.url}/__admin/reset`, { method: 'POST' });
            const opts = { connectionString: db, account: `outage-${n++}`, limits: { batch: LIMIT } };
            const budgets: PgThrottle[] = [await createPgThrottle(opts), await createPgThrottle(opts)];
            const transports = budgets.map((throttle) =>
              createTransport({ baseUrl: resets ? sandbox.url : path.url, apiKey: DEFAULT_API_KEY, throttle, timeoutMs: resets ? 5000 : 300 }),
            );
            const drivers = transports.map((t) => drive(t, 6));
            try {
              await sleep(1000);
              await outage(true);
              await sleep(2000);
              await outage(false);
              const recovered = performance.now();
              await sleep(3000);
              const outcomes = (await Promise.all(drivers.map((d) => d.stop()))).flat();
              return {
                // Answers in the two seconds after the first second back: the limit would be 2 × LIMIT.
                ok: count(outcomes, 'ok', recovered + 1000, recovered + 3000),
                failedInOutage: count(outcomes, resets ? 'failed' : 'timeout', recovered - 2000, recovered),
                tooMany: count(outcomes, '429'),
                sandbox429: (await batchStatuses(sandbox))['429'] ?? 0,
              };
            } finally {
              await Promise.all(drivers.map((d) => d.stop()));
              await Promise.all(transports.map((t) => t.close()));
              await Promise.all(budgets.map((b) => b.close()));
            }
          },
          (r) => r.ok >= 0.8 * 2 * LIMIT,
        );
        for (const r of results) {
          // The outage was real: the lanes were all taken by requests that failed without an answer.
          expect(r.failedInOutage, JSON.stringify(results)).toBeGreaterThanOrEqual(LIMIT);
          expect(r.tooMany, JSON.stringify(results)).toBe(0);
          expect(r.sandbox429, JSON.stringify(results)).toBe(0);
        }
        expect(fast, JSON.stringify(results)).toBeDefined();
      } finally {
        await path.close();
        await sandbox.stop();
      }
    },
    90_000,
  );

  it('with the account’s budget at a strict limit, timeouts after the platform counted the request, late answers and prompt ones mixed: never a 429', async () => {
    const LIMIT = 50;
    const sandbox = await startSandboxProcess({ accounts: [{ id: 'acct', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: LIMIT } }] });
    // Of every 20 requests about 7 time out after the sandbox counted them up to 150 ms late, 5 are
    // answered up to 150 ms late, 8 at once.
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const path = await startSlowPath(sandbox.url, () => {
      const r = random();
      return { lateMs: r < 0.6 ? 20 + Math.floor(random() * 130) : 0, withhold: r < 0.35 };
    });
    const throttle = await createPgThrottle({ connectionString: db, account: 'mixed', limits: { batch: LIMIT } });
    const transport = createTransport({ baseUrl: path.url, apiKey: DEFAULT_API_KEY, throttle, timeoutMs: 500, connections: 64 });
    const driver = drive(transport, LIMIT);
    try {
      await sleep(5000);
      const outcomes = await driver.stop();
      const statuses = await batchStatuses(sandbox);
      const summary = JSON.stringify({
        ok: count(outcomes, 'ok'),
        timeout: count(outcomes, 'timeout'),
        failed: count(outcomes, 'failed'),
        tooMany: count(outcomes, '429'),
        withheld: path.withheld(),
        statuses,
      });
      // The mix was there: many timeouts, more answers.
      expect(count(outcomes, 'timeout'), summary).toBeGreaterThanOrEqual(30);
      expect(count(outcomes, 'ok'), summary).toBeGreaterThanOrEqual(60);
      // The sandbox refused nothing, neither to the client nor behind a timeout.
      expect(count(outcomes, '429'), summary).toBe(0);
      expect(statuses['429'] ?? 0, summary).toBe(0);
    } finally {
      await driver.stop();
      await transport.close();
      await throttle.close();
      await path.close();
      await sandbox.stop();
    }
  }, 60_000);
});
