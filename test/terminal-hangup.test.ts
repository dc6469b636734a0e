import { spawn } from 'node:child_process';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { validateArgs } from '@dq/test-support/csv';
import { TEST_KEY, sandboxWith } from '@dq/test-support/platform';
import { runOnTerminal } from '@dq/test-support/terminal';
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

async function until(what: string, done: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

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
    await until('a checkpoint with rows', async () => (await checkpointed()) > 0, 60_000);
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
});
