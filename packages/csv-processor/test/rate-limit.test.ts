import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { startSandboxProcess } from '@dq/test-support/sandbox-process';
import { runCli, sampleArgs, sandboxEnv, summaryOf, useTempDir } from './helpers.js';

// The platform allows exactly 100 batch/sync calls in any sliding second and forgives nothing; the
// sandbox does the same by default. dq-csv at its default limit must keep its own margin: no 429.
const ROWS = 900;
const dir = useTempDir();
const input = join(dir, 'in.csv');

beforeAll(async () => {
  await writeFile(input, makeSampleCsv(ROWS, 31));
});

/** One dq-csv run at the default batch limit (100/s); calls and 429s as the sandbox counted them. */
async function run(config?: object): Promise<{ code: number | null; ok: number; tooMany: number; perSecond: number }> {
  const sandbox = await startSandboxProcess(config);
  try {
    const result = await runCli(sampleArgs(input, join(dir, 'out.csv')), sandboxEnv(sandbox));
    const batch = (await sandbox.stats()).requests['batch']?.byStatus ?? {};
    const ok = batch['200'] ?? 0;
    return { code: result.code, ok, tooMany: batch['429'] ?? 0, perSecond: ok / (summaryOf(result).durationMs / 1000) };
  } finally {
    await sandbox.stop();
  }
}

describe('dq-csv against a platform that allows exactly 100 calls in any second', () => {
  it('causes no 429 over several seconds, and is as fast as against a platform with no limit at all', async () => {
    const strict = await run();
    expect(strict.code).toBe(0);
    expect(strict.ok).toBeGreaterThan(700); // several seconds' worth of calls (some rows share an address)
    expect(strict.tooMany).toBe(0);
    // The same run where the platform does not limit: the client's own pacing alone. A 429 would
    // have halved the rate for a while; the strict run must not fall behind this. Both runs share
    // the machine's load, which is what makes the comparison fair on a busy machine.
    const free = await run({ accounts: [{ id: 'free', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] });
    expect(free.code).toBe(0);
    expect(free.perSecond).toBeLessThanOrEqual(100);
    expect(strict.perSecond).toBeGreaterThanOrEqual(0.93 * free.perSecond);
    expect(strict.perSecond).toBeGreaterThan(50);
  }, 120_000);
});
