import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { useSandbox } from '@dq/test-support/use';

// A wall clock that steps during a run (NTP, or an operator setting it) while a call waits to be
// retried: the retry policy's time budget is measured on the monotonic clock, so a step neither
// ends the retries at once nor stretches them. A real process whose wall clock libfaketime moves
// (its monotonic clock left real), calling the sandbox over real HTTP.

const CORE = fileURLToPath(new URL('..', import.meta.url));
const dist = (path: string) => JSON.stringify(pathToFileURL(join(CORE, 'dist', path)).href);
const RUN = `import { createEngine, createSilentLogger, exitCodeFor } from ${dist('index.js')};
try {
  const engine = createEngine({ mode: 'address', baseUrl: process.env.DQ_BASE_URL, apiKey: process.env.DQ_API_KEY, threads: 0, logger: createSilentLogger() });
  const [result] = await engine.process([{ street: 'Uhrenweg', houseNumber: '7', postalCode: '10115', locality: 'Berlin', country: 'DE' }]);
  await engine.close();
  process.stdout.write(JSON.stringify({ status: result.status, source: result.source, error: result.error }) + '\\n');
} catch (e) {
  process.stderr.write(e.code === undefined ? String(e.stack) : \`run: \${e.code}: \${e.message}\\n\`);
  process.exitCode = exitCodeFor(e);
}
`;

const sandbox = useSandbox();
const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);
const refused = (): number => sandbox.stats().requests['batch']?.byStatus['429'] ?? 0;

let base: string;
let script: string;
/** libfaketime's preload library (its wall clock read from a file the test rewrites). */
let library: string;
beforeAll(async () => {
  const found = spawnSync('sh', ['-c', 'ls /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 2>/dev/null'], { encoding: 'utf8' });
  const first = found.stdout.split('\n')[0];
  if (!first) throw new Error('these tests need libfaketime (apt-get install faketime): its libfaketime.so.1 was not found');
  library = first;
  base = await mkdtemp(join(tmpdir(), 'dq-clock-jump-'));
  script = join(base, 'run.mjs');
  await writeFile(script, RUN);
});
afterAll(async () => base && rm(base, { recursive: true, force: true }));
beforeEach(() => sandbox.reset());

it.each(['+1h', '+3d'])(
  'a wall clock stepped %s during a Retry-After wait: the call is retried again and answered',
  async (step) => {
    const clock = join(base, `clock${step}`);
    await writeFile(clock, '+0\n');
    // Every call refused with a 429 (Retry-After 2 s) until two were.
    sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 2 } });
    const child = spawn(process.execPath, [script], {
      env: {
        ...process.env,
        ...sandbox.env(),
        LD_PRELOAD: library,
        FAKETIME_TIMESTAMP_FILE: clock,
        FAKETIME_NO_CACHE: '1',
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
    const deadline = Date.now() + 15_000;
    while (refused() === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(refused(), stderr).toBe(1);
    // In the middle of the wait the wall clock steps; the retry after it is refused once more, and
    // the one after that answered.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await writeFile(clock, `${step}\n`);
    while (refused() < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    sandbox.setFaults({});
    const code = await ended;
    expect([code, stderr]).toEqual([0, '']);
    expect(JSON.parse(stdout)).toMatchObject({ source: 'api', status: expect.not.stringMatching(/^unavailable$/) });
    expect(billable()).toBe(1);
  },
  30_000,
);
