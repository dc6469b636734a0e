import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeSampleCsv } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { sampleArgs } from '@dq/test-support/csv';
import { useSandbox, useTempDir } from '@dq/test-support/use';

// A --base-url with a wrong path answers 404 to every call (README, exit codes): the run stops at
// once with exit 2 and says which flag to fix, instead of marking every row unavailable and
// ending with 75, which a scheduler would retry for ever.
const DQ_CSV = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const dir = useTempDir('dq-platform-url-');
const sandbox = useSandbox();

describe('a --base-url the platform has no endpoints under', () => {
  it('dq-csv stops with exit 2 naming --base-url, after one round of calls, with no row marked unavailable', async () => {
    const input = join(dir, 'in.csv');
    await writeFile(input, makeSampleCsv(200, 3));
    const env = { ...sandbox.env(), DQ_BASE_URL: `${sandbox.url}/v2` };
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [DQ_CSV, ...sampleArgs(input, join(dir, 'out.csv'))], { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
        resolve({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr }),
      ),
    );
    expect(code, stderr.slice(-2000)).toBe(2);
    expect(stderr).toContain(`the platform has no endpoint under ${sandbox.url}/v2, the base URL (--base-url, env DQ_BASE_URL) (HTTP 404`);
    expect(stderr).toContain('fix that URL, then rerun with --resume');
    expect(stderr).not.toMatch(/\n\s+at /);
    const summary = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{"event":"summary"')) ?? '{}') as {
      byStatus?: { unavailable?: number };
      error?: { code?: string };
    };
    expect(summary.error?.code).toBe('platform-url-unknown');
    expect(summary.byStatus?.unavailable ?? 0).toBe(0);
    // The calls in flight when the first 404 came back, not one per row.
    const stats = sandbox.stats();
    const notFound = Object.values(stats.requests).reduce((n, r) => n + (r.byStatus['404'] ?? 0), 0);
    expect(notFound).toBeGreaterThan(0);
    expect(notFound).toBeLessThanOrEqual(40);
  }, 60_000);
});
