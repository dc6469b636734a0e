import { spawn } from 'node:child_process';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { validateArgs } from '@dq/test-support/csv';
import { TEST_KEY, sandboxWith } from '@dq/test-support/platform';
import { closeAfterEach, useTempDir } from '@dq/test-support/use';

// README "Signals" and "Exit codes": the first SIGTERM drains a dq-csv run (no call started after
// it, the calls in flight answered and kept, at most 10 s), it exits 75 `interrupted`, and the
// resume writes every row once and pays for no answer twice, except calls cut in flight.
const DQ_CSV = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const MAP = 'street=strasse,houseNumber=nr,postalCode=plz,locality=ort';

const dir = useTempDir('dq-stop-drain-');
let sandbox: Sandbox | undefined;
closeAfterEach(
  () => [sandbox],
  () => (sandbox = undefined),
);

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

interface Ended {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  at: number;
}

function start(args: string[], env: NodeJS.ProcessEnv): { kill: (s: NodeJS.Signals) => number; ended: Promise<Ended>; stderr: () => string } {
  const child = spawn(process.execPath, [DQ_CSV, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<Ended>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, at: Date.now() })));
  return {
    kill: (s) => {
      child.kill(s);
      return Date.now();
    },
    ended,
    stderr: () => stderr,
  };
}

const summaryOf = (end: Ended): Record<string, unknown> => JSON.parse(end.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;

async function inputOf(name: string, rows: number): Promise<{ input: string; lines: string[] }> {
  const input = join(dir, `${name}.csv`);
  const lines = Array.from({ length: rows }, (_, i) => `Ringstr.;${i + 1};10115;Berlin`);
  await writeFile(input, `strasse;nr;plz;ort\n${lines.join('\n')}\n`);
  return { input, lines };
}

/** Every input row once, in order, with its values as read. */
async function expectEveryRowOnce(output: string, lines: string[]): Promise<void> {
  const rows = (await readFile(output, 'utf8')).trimEnd().split('\n');
  expect(rows[0]!.startsWith('strasse;nr;plz;ort;dq_status')).toBe(true);
  const body = rows.slice(1);
  expect(body).toHaveLength(lines.length);
  body.forEach((row, i) => expect(row.startsWith(`${lines[i]};`)).toBe(true));
  expect(body.filter((row) => row.split(';')[4] === 'unavailable')).toEqual([]);
}

const billed = (): number => sandbox?.stats().billable['it'] ?? 0;
const envOf = (sb: Sandbox): NodeJS.ProcessEnv => ({ ...process.env, DQ_BASE_URL: sb.url, DQ_API_KEY: TEST_KEY });

describe('dq-csv stopped by SIGTERM, then resumed', () => {
  it('before the first call (as soon as the run holds its lock): exit 75, nothing bought, and the resume buys every row once', async () => {
    sandbox = await sandboxWith();
    const { input, lines } = await inputOf('early', 50);
    const output = join(dir, 'early-out.csv');
    const args = validateArgs(input, output, MAP, '--store', join(dir, 'early-store'));
    const run = start(args, envOf(sandbox));
    await until('the lock', () => exists(`${output}.lock`), 15_000, 2);
    run.kill('SIGTERM');
    const end = await run.ended;
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 75, signal: null });
    expect(summaryOf(end)).toMatchObject({ exitCode: 75, error: { code: 'interrupted' } });
    expect(end.stderr).toContain('dq-csv: SIGTERM: stopping once the calls in flight are answered');
    const paid = billed();
    const resumed = await start([...args, '--resume'], envOf(sandbox)).ended;
    expect(resumed.code, resumed.stderr).toBe(0);
    await expectEveryRowOnce(output, lines);
    expect(paid).toBeLessThanOrEqual(8);
    expect(billed()).toBe(lines.length);
  });

  it('while the platform is down (503 on every call): the drain ends when the retries give up (within the 10 s), exit 75 `interrupted` naming the outage, no row marked unavailable, and the resume buys every row once', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [503] } });
    const { input, lines } = await inputOf('down', 40);
    const output = join(dir, 'down-out.csv');
    const args = validateArgs(input, output, MAP, '--store', join(dir, 'down-store'));
    const run = start(args, envOf(sandbox));
    await until('the first refused call', () => (sandbox!.stats().faults['batch']?.errors ?? 0) > 0, 15_000);
    const at = run.kill('SIGTERM');
    const end = await run.ended;
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 75, signal: null });
    expect(end.at - at, end.stderr).toBeLessThan(14_000);
    const summary = summaryOf(end);
    expect(summary, end.stderr).toMatchObject({ exitCode: 75 });
    expect(end.stderr).toContain('dq-csv: interrupted: interrupted by SIGTERM; meanwhile the platform could not be reached');
    expect(summary).toMatchObject({ error: { code: 'interrupted' }, byStatus: { unavailable: 0 } });
    sandbox.setFaults({});
    const resumed = await start([...args, '--resume'], envOf(sandbox)).ended;
    expect(resumed.code, resumed.stderr).toBe(0);
    await expectEveryRowOnce(output, lines);
    expect(billed()).toBe(lines.length);
  });
});
