import { spawn } from 'node:child_process';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { validateArgs } from '@dq/test-support/csv';
import { TEST_KEY, sandboxWith } from '@dq/test-support/platform';
import { runOnTerminal } from '@dq/test-support/terminal';
import { until } from '@dq/test-support/timing';
import { closeAfterEach, useTempDir } from '@dq/test-support/use';

// A run started in an ssh session whose connection drops (or in a terminal window that is closed)
// gets SIGHUP, and its terminal goes away under it. README "Exit codes": it stops as on SIGTERM, at
// a checkpoint, with exit 75, and the resume pays only for answers it does not have.
const DQ_CSV = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const ROWS = 1200;

const dir = useTempDir('dq-hangup-');
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

function runPlain(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [DQ_CSV, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('the terminal of a run hangs up', () => {
  it('dq-csv stops at a checkpoint with exit 75 (not killed by SIGHUP, not aborted), and the resume pays only for rows not answered', async () => {
    sandbox = await sandboxWith();
    const input = join(dir, 'in.csv');
    const output = join(dir, 'out.csv');
    const lines = Array.from({ length: ROWS }, (_, i) => `Hauptstr.;${i + 1};10115;Berlin`);
    await writeFile(input, `strasse;nr;plz;ort\n${lines.join('\n')}\n`);
    const args = validateArgs(input, output, 'street=strasse,houseNumber=nr,postalCode=plz,locality=ort', '--store', join(dir, 'store'), '--batch-size', '100');
    const env = { ...process.env, DQ_BASE_URL: sandbox.url, DQ_API_KEY: TEST_KEY };

    // Slow enough to be hung up part way: 20 calls a second.
    const run = runOnTerminal(process.execPath, [DQ_CSV, ...args, '--rate-limit', '20'], { env });
    const checkpointed = async (): Promise<number> =>
      (await exists(`${output}.checkpoint.json`))
        ? (JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as { position: { records: number } }).position.records
        : 0;
    await until('a checkpoint with rows', async () => (await checkpointed()) > 0, 60_000, 50);
    run.hangUp();
    const end = await run.ended;
    expect(end, run.output()).toEqual({ code: 75, signal: null });
    const paidFirst = sandbox.stats().billable['it'] ?? 0;
    expect(paidFirst).toBeGreaterThan(0);
    expect(paidFirst).toBeLessThan(ROWS);
    expect(await checkpointed()).toBeLessThan(ROWS);

    const resumed = await runPlain([...args, '--resume'], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    const rows = (await readFile(output, 'utf8')).trimEnd().split('\n').slice(1);
    expect(rows).toHaveLength(ROWS);
    expect(rows.map((r) => r.split(';')[1])).toEqual(lines.map((l) => l.split(';')[1]));
    // Every row's address was bought once, over both runs: the answers of the batch in flight when
    // the terminal went away were kept.
    expect(sandbox.stats().billable['it']).toBe(ROWS);
  });

  it('dq-csv stopped while calls are in flight: no call is started after the stop, those in flight are answered and kept, a repeated SIGTERM changes nothing, and the resume pays for no row twice; a second SIGINT cuts them at once', async () => {
    sandbox = await sandboxWith();
    const rows = 120;
    const input = join(dir, 'slow.csv');
    await writeFile(input, `strasse;nr;plz;ort\n${Array.from({ length: rows }, (_, i) => `Ringstr.;${i + 1};10115;Berlin`).join('\n')}\n`);
    const env = { ...process.env, DQ_BASE_URL: sandbox.url, DQ_API_KEY: TEST_KEY };
    const billed = (): number => sandbox?.stats().billable['it'] ?? 0;

    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      sandbox.reset();
      // Each answer takes 2 s: the calls after the first answer are under way when the signals come.
      sandbox.setFaults({ batch: { latencyMs: 2_000 } });
      const output = join(dir, `slow-${signal}.csv`);
      const args = validateArgs(input, output, 'street=strasse,houseNumber=nr,postalCode=plz,locality=ort', '--store', join(dir, `store-${signal}`));
      const child = spawn(process.execPath, [DQ_CSV, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const ended = new Promise<{ code: number | null; signal: string | null; at: number }>((resolve) =>
        child.on('close', (code, sig) => resolve({ code, signal: sig, at: Date.now() })),
      );
      await until('the first answer', async () => billed() > 0, 30_000, 50);
      await new Promise((r) => setTimeout(r, 300));
      child.kill(signal);
      await new Promise((r) => setTimeout(r, 200));
      const again = Date.now();
      child.kill(signal);
      const end = await ended;
      expect({ code: end.code, signal: end.signal }, stderr).toEqual({ code: 75, signal: null });
      expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toMatchObject({ exitCode: 75, error: { code: 'interrupted' } });
      // The platform finishes (and bills) every call it received, cut by the client or not.
      await new Promise((r) => setTimeout(r, 2_500));
      const paid = billed();
      sandbox.setFaults({});
      const resumed = await runPlain([...args, '--resume'], env);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect((await readFile(output, 'utf8')).trimEnd().split('\n')).toHaveLength(rows + 1);
      if (signal === 'SIGTERM') {
        // Nothing was bought twice: the answers of the calls in flight were kept.
        expect(billed()).toBe(rows);
        // The calls in flight were waited for, not cut.
        expect(end.at - again).toBeGreaterThan(1_000);
        expect(stderr).toContain('dq-csv: SIGTERM again: already stopping once the calls in flight are answered');
      } else {
        expect(stderr).toContain('dq-csv: second SIGINT: cutting the calls in flight now');
        expect(end.at - again).toBeLessThan(1_500);
        // The calls cut in flight were billed and are bought again by the resume.
        expect(paid).toBeGreaterThan(1);
        expect(billed()).toBeGreaterThan(rows);
      }
    }
  });
});
