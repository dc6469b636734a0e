import { spawn } from 'node:child_process';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { validateArgs } from '@dq/test-support/csv';
import { TEST_KEY, sandboxWith } from '@dq/test-support/platform';
import { until } from '@dq/test-support/timing';
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

const outputRows = async (output: string): Promise<string[]> => (await readFile(output, 'utf8')).trimEnd().split('\n').slice(1);

async function expectEveryRowOnce(output: string, lines: string[]): Promise<void> {
  const body = await outputRows(output);
  expect(body).toHaveLength(lines.length);
  body.forEach((row, i) => expect(row.startsWith(`${lines[i]};`)).toBe(true));
  expect(body.filter((row) => row.split(';')[4] === 'unavailable')).toEqual([]);
}

const billed = (): number => sandbox?.stats().billable['it'] ?? 0;
const inFlight = (): number => sandbox?.stats().concurrent['batch']?.now ?? 0;
const envOf = (sb: Sandbox): NodeJS.ProcessEnv => ({ ...process.env, DQ_BASE_URL: sb.url, DQ_API_KEY: TEST_KEY });

/** Clears the faults, resumes the run (exit 0), and checks every row once and `total` calls billed over all the runs. */
async function resumeToEnd(args: string[], output: string, lines: string[], total = lines.length): Promise<void> {
  sandbox!.setFaults({});
  const resumed = await start([...args, '--resume'], envOf(sandbox!)).ended;
  expect(resumed.code, resumed.stderr).toBe(0);
  await expectEveryRowOnce(output, lines);
  expect(billed()).toBe(total);
}

describe('dq-csv stopped by SIGTERM with calls in flight, then resumed (more cases)', () => {
  it('--store off: the batches the calls in flight complete are written, and the resume buys nothing twice', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ batch: { latencyMs: 2_000 } });
    const { input, lines } = await inputOf('off', 40);
    const output = join(dir, 'off-out.csv');
    const args = validateArgs(input, output, MAP, '--store', 'off', '--batch-size', '4', '--concurrency', '8', '--threads', '0');
    const run = start(args, envOf(sandbox));
    await until('8 calls in flight', () => inFlight() >= 8, 15_000);
    run.kill('SIGTERM');
    const end = await run.ended;
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 75, signal: null });
    expect(summaryOf(end)).toMatchObject({ exitCode: 75, error: { code: 'interrupted' } });
    expect(await outputRows(output)).toHaveLength(8);
    expect(billed()).toBe(8);
    await resumeToEnd(args, output, lines);
  });

  it('--threads 2: the calls in flight on both threads are answered and kept; the resume buys nothing twice', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ batch: { latencyMs: 2_000 } });
    const { input, lines } = await inputOf('threads', 80);
    const output = join(dir, 'threads-out.csv');
    const args = validateArgs(input, output, MAP, '--store', join(dir, 'threads-store'), '--threads', '2', '--concurrency', '8', '--batch-size', '20');
    const run = start(args, envOf(sandbox));
    await until('8 calls in flight', () => inFlight() >= 8, 15_000);
    run.kill('SIGTERM');
    const end = await run.ended;
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 75, signal: null });
    expect(billed()).toBe(8);
    await resumeToEnd(args, output, lines);
  });

  it('during a 429 Retry-After wait: the run stops within the grace, exits 75, and the resume buys every row once', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ batch: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 4 } });
    const { input, lines } = await inputOf('429', 20);
    const output = join(dir, '429-out.csv');
    const args = validateArgs(input, output, MAP, '--store', join(dir, '429-store'), '--concurrency', '4');
    const run = start(args, envOf(sandbox));
    await until('a 429', () => (sandbox!.stats().faults['batch']?.errors ?? 0) > 0, 15_000);
    const at = run.kill('SIGTERM');
    const end = await run.ended;
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 75, signal: null });
    expect(end.at - at).toBeLessThan(13_000);
    expect(summaryOf(end)).toMatchObject({ exitCode: 75, error: { code: 'interrupted' } });
    await resumeToEnd(args, output, lines);
  });

  it('--max-calls reached while its calls are in flight, then SIGTERM: exit 5, the answers kept, the resume buys nothing twice', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ batch: { latencyMs: 2_000 } });
    const { input, lines } = await inputOf('cap', 30);
    const output = join(dir, 'cap-out.csv');
    // More slots than the cap: call 9 is refused at the cap at once, while the 8 paid for are in flight.
    const args = validateArgs(input, output, MAP, '--store', join(dir, 'cap-store'), '--concurrency', '16', '--batch-size', '10');
    const run = start([...args, '--max-calls', '8'], envOf(sandbox));
    await until('8 calls in flight', () => inFlight() >= 8, 15_000);
    await new Promise((r) => setTimeout(r, 300));
    run.kill('SIGTERM');
    const end = await run.ended;
    // The cap needs a new --max-calls, which a rerun alone would meet again: exit 5 (README "Exit codes").
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 5, signal: null });
    expect(summaryOf(end)).toMatchObject({ exitCode: 5, error: { code: 'max-calls-reached' } });
    expect(billed()).toBe(8);
    await resumeToEnd(args, output, lines);
  });

  it('a platform that hangs past the grace: the calls are cut 10 s after SIGTERM, exit 75, and only the cut calls are bought again', async () => {
    sandbox = await sandboxWith();
    sandbox.setFaults({ batch: { latencyMs: 13_000 } });
    const { input, lines } = await inputOf('hang', 12);
    const output = join(dir, 'hang-out.csv');
    const args = validateArgs(input, output, MAP, '--store', join(dir, 'hang-store'), '--concurrency', '4');
    const run = start(args, envOf(sandbox));
    await until('4 calls in flight', () => inFlight() >= 4, 15_000);
    const at = run.kill('SIGTERM');
    const end = await run.ended;
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 75, signal: null });
    expect(end.at - at).toBeGreaterThan(9_000);
    expect(end.at - at).toBeLessThan(12_500);
    expect(summaryOf(end)).toMatchObject({ exitCode: 75, error: { code: 'interrupted' } });
    // The cut is said, as a second SIGINT's is: these answers are bought again by the resume.
    expect(end.stderr).toContain('dq-csv: 10 s after SIGTERM: cutting the calls still in flight (their answers may be bought again by the resume)');
    // The platform finishes (and bills) the calls it received whole.
    await until('the cut calls billed', () => billed() >= 4, 10_000);
    await resumeToEnd(args, output, lines, lines.length + 4);
  });

  it('a --dry-run stops at once: exit 75 `interrupted`, its plan so far, no file written, no "--resume" advice', async () => {
    sandbox = await sandboxWith();
    const { input } = await inputOf('dry', 600_000);
    const run = start(validateArgs(input, join(dir, 'dry.out.csv'), MAP, '--dry-run', '--store', join(dir, 'store-dry')), envOf(sandbox));
    await new Promise((r) => setTimeout(r, 1_000));
    run.kill('SIGTERM');
    const end = await run.ended;
    expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code: 75, signal: null });
    expect(end.stderr).toContain('dq-csv: SIGTERM: stopping the dry run\n');
    expect(end.stderr).not.toContain('--resume');
    const summary = summaryOf(end) as { outcome: string; rows: number; plan: object; error: { code: string; message: string }; output?: string };
    expect(summary).toMatchObject({ outcome: 'stopped', exitCode: 75, error: { code: 'interrupted' } });
    expect(summary.rows).toBeLessThan(600_000);
    expect(summary.error.message).toContain('the dry run stopped after');
    expect(summary.plan).toBeDefined();
    expect(summary.output).toBeUndefined();
    expect(billed()).toBe(0);
  });
});

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
    await resumeToEnd(args, output, lines);
  });
});
