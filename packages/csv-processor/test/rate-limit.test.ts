import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';
import { runCli, summaryOf, tempDir } from './helpers.js';

// The platform allows exactly 100 batch/sync calls in any sliding second and forgives nothing; the
// sandbox does the same by default. dq-csv at its default limit must keep its own margin: no 429.
const SANDBOX_CLI = fileURLToPath(new URL('../../../tools/sandbox/bin/dq-sandbox.js', import.meta.url));
const ROWS = 900;
let dir: string;
let cleanup: () => Promise<void>;
let input: string;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
  input = join(dir, 'in.csv');
  await writeFile(input, makeSampleCsv(ROWS, 31));
});
afterAll(async () => cleanup());

/** The sandbox in a process of its own, as the platform runs on a machine of its own. */
async function sandboxProcess(config?: object): Promise<{ url: string; child: ChildProcess }> {
  const args = [SANDBOX_CLI, '--port', '0'];
  if (config) {
    const file = join(dir, `sandbox-${Date.now()}.json`);
    await writeFile(file, JSON.stringify(config));
    args.push('--config', file);
  }
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = createInterface({ input: child.stdout! });
  const [url] = (await once(lines, 'line')) as [string];
  lines.close();
  return { url, child };
}

/** One dq-csv run at the default batch limit (100/s); calls and 429s as the sandbox counted them. */
async function run(config?: object): Promise<{ code: number | null; ok: number; tooMany: number; perSecond: number }> {
  const sandbox = await sandboxProcess(config);
  try {
    const result = await runCli(
      [
        'validate',
        '--input',
        input,
        '--output',
        join(dir, 'out.csv'),
        '--delimiter',
        ';',
        '--country',
        'DE',
        '--map',
        'addressLine=strasse,postalCode=plz,locality=ort,country=land',
      ],
      { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY },
    );
    const stats = (await (await fetch(`${sandbox.url}/__admin/stats`)).json()) as { requests: Record<string, { byStatus: Record<string, number> }> };
    const batch = stats.requests['batch']?.byStatus ?? {};
    const ok = batch['200'] ?? 0;
    return { code: result.code, ok, tooMany: batch['429'] ?? 0, perSecond: ok / (summaryOf(result).durationMs / 1000) };
  } finally {
    const exited = once(sandbox.child, 'exit');
    sandbox.child.kill('SIGTERM');
    await exited;
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
