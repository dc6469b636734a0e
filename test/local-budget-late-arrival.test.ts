import { DEFAULT_API_KEY } from '@dq/sandbox';
import { DqError } from '@dq/core/errors';
import { createSharedThrottle } from '@dq/core/throttle';
import { createTransport, type Transport } from '@dq/core/transport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { bestOf } from '@dq/test-support/timing';
import { startSlowPath, type SlowPath } from './slow-path.js';

// The budget of one process (throttle/shared.ts) against the sandbox's strict limit, in a process
// of its own: exactly `limit` requests in any sliding second, nothing forgiven. With more callers
// waiting than the limit allows in a second (a bulk run's normal state), a request that reaches
// the platform late (a slow path, a connection being set up, a platform that reads it late) is
// counted late; its answer says so, and the request a second's worth of slots after it must wait
// for a second after that answer. A slot handed to a waiter long before its time cannot move any
// more, and that request then goes too soon: 429.

const BATCH = '/location/v1/validate/batch/sync';
const LIMIT = 10;

let sandbox: SandboxProcess;
beforeAll(async () => {
  sandbox = await startSandboxProcess({ accounts: [{ id: 'acct', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: LIMIT } }] });
});
afterAll(async () => {
  await sandbox?.stop();
});

/** A path to the sandbox on which every `every`-th request arrives `lateMs` late; answers come back at once. */
function startLatePath(target: string, every: number, lateMs: number): Promise<SlowPath> {
  let n = 0;
  return startSlowPath(target, () => ({ lateMs: ++n % every === 0 ? lateMs : 0, withhold: false }));
}

/** `callers` loops sending batch/sync requests, one attempt each, for `ms`; counts answers and 429s. */
async function drive(transport: Transport, callers: number, ms: number): Promise<{ ok: number; tooMany: number; failed: number }> {
  const counts = { ok: 0, tooMany: 0, failed: 0 };
  const until = performance.now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < until) {
        const id = `r${n++}`;
        try {
          await transport.request({
            endpoint: 'batch',
            method: 'POST',
            path: BATCH,
            body: { street: 'Lindenweg', houseNumber: String((n % 40) + 1), postalCode: '10115', locality: 'Berlin', country: 'DE', customerAddressId: id },
            retry: false,
          });
          counts.ok++;
        } catch (e) {
          if (e instanceof DqError && e.status === 429) counts.tooMany++;
          else counts.failed++;
        }
      }
    }),
  );
  return counts;
}

describe('the budget of one process, more callers than the limit, against the strict sandbox', () => {
  it('a request that reaches the platform 300 ms late delays the request a second’s worth of slots after it: no 429, and the limit still used', async () => {
    const path = await startLatePath(sandbox.url, 4, 300);
    try {
      const { results, fast } = await bestOf(
        3,
        async () => {
          await fetch(`${sandbox.url}/__admin/reset`, { method: 'POST' });
          const throttle = createSharedThrottle({ limits: { batch: LIMIT } });
          const transport = createTransport({ baseUrl: path.url, apiKey: DEFAULT_API_KEY, throttle });
          try {
            const counts = await drive(transport, 3 * LIMIT, 4_000);
            const statuses = (await sandbox.stats()).requests['batch']?.byStatus ?? {};
            return { ...counts, sandbox429: statuses['429'] ?? 0 };
          } finally {
            await transport.close();
          }
        },
        // 4 s at 10/s: 40 slots and those of the callers still waiting at the end; a loaded machine may lose a few.
        (r) => r.ok >= 0.8 * 4 * LIMIT,
      );
      expect(path.late()).toBeGreaterThanOrEqual(4); // the late path was taken, every run
      for (const r of results) {
        expect(r.failed, JSON.stringify(results)).toBe(0);
        expect(r.tooMany, JSON.stringify(results)).toBe(0);
        expect(r.sandbox429, JSON.stringify(results)).toBe(0);
      }
      expect(fast, JSON.stringify(results)).toBeDefined();
    } finally {
      await path.close();
    }
  });
});
