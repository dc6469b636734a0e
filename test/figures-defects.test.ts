import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { validateArgs } from '@dq/test-support/csv';
import { useSandbox, useTempDir } from '@dq/test-support/use';

// The cost figures of dq-csv's summary (README "The result store", "Spending cap", and
// packages/csv-processor/README.md "Progress and summary") against what the sandbox billed the
// account and against the rows of the input: real dq-csv processes, the sandbox over real HTTP.

const DQ_CSV = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const ACCOUNT = 'acct';
const dir = useTempDir('dq-figures-csv-');
// No rate limit on the sandbox's side either: the figures, not the pacing, are under test.
const sandbox = useSandbox({
  accounts: [{ id: ACCOUNT, apiKeys: ['dq-sandbox-key'], rateLimits: { batch: 0 } }],
});

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], started?: (child: ChildProcess) => void): Promise<Exit> {
  const child = spawn(process.execPath, [DQ_CSV, ...args], {
    env: { ...process.env, ...sandbox.env() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  started?.(child);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The summary line of stdout. */
function summary(exit: Exit): Record<string, any> {
  const line = exit.stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.includes('"summary"'));
  if (!line) throw new Error(`no summary; exit ${exit.code}; stderr: ${exit.stderr.slice(-2000)}`);
  return JSON.parse(line) as Record<string, any>;
}

/** What the sandbox billed the account so far. */
const billed = (): number => sandbox.stats().billable[ACCOUNT] ?? 0;

/** batch/sync requests the sandbox received so far, and those it answered with 200 (a truncated answer included). */
function batchRequests(): { total: number; ok: number } {
  const b = sandbox.stats().requests['batch'];
  return { total: b?.total ?? 0, ok: b?.byStatus['200'] ?? 0 };
}

/**
 * Waits until the sandbox's counters stay put for longer than its latency: a request the platform
 * still works on after its client went is counted, and billed, when it is answered.
 */
async function billedSettled(): Promise<number> {
  let last = billed() + batchRequests().total;
  for (let still = 0; still < 25;) {
    await new Promise((r) => setTimeout(r, 100));
    const now = billed() + batchRequests().total;
    still = now === last ? still + 1 : 0;
    last = now;
  }
  return billed();
}

/** A `strasse;nr;plz;ort` file: `distinct` addresses (house numbers `first`…), the whole list `copies` times. */
async function csv(name: string, distinct: number, copies = 1, first = 1): Promise<string> {
  const rows: string[] = [];
  for (let c = 0; c < copies; c++) for (let i = 0; i < distinct; i++) rows.push(`Birkenweg;${first + i};10115;Berlin`);
  const file = join(dir, name);
  await writeFile(file, ['strasse;nr;plz;ort', ...rows].join('\n') + '\n');
  return file;
}

const args = (input: string, output: string, store: string, ...more: string[]): string[] =>
  validateArgs(
    input,
    join(dir, output),
    'street=strasse,houseNumber=nr,postalCode=plz,locality=ort',
    '--rate-limit',
    '0',
    '--store',
    join(dir, store),
    ...more,
  );

describe('dq-csv cost figures where calls are cut, retried or saved by the store', () => {
  it('a second SIGINT cuts the calls in flight: the platform bills them, and apiCalls counts them', async () => {
    const input = await csv('cut.csv', 600, 1, 30_000);
    sandbox.setFaults({ batch: { latencyMs: 1500 } });
    const before = { billed: billed(), ...batchRequests() };
    let stopped: Exit;
    try {
      stopped = await run(args(input, 'cut.out.csv', 'store-cut', '--concurrency', '40', '--batch-size', '100'), (child) => {
        const poll = setInterval(() => {
          if (batchRequests().total - before.total < 40) return;
          clearInterval(poll);
          child.kill('SIGINT');
          setTimeout(() => child.kill('SIGINT'), 100);
        }, 20);
        child.once('close', () => clearInterval(poll));
      });
    } finally {
      sandbox.setFaults({});
    }
    expect(stopped.code, stopped.stderr.slice(-2000)).toBe(75);
    const s1 = summary(stopped);
    const paid1 = (await billedSettled()) - before.billed;
    expect(paid1).toBeGreaterThanOrEqual(40);
    expect({
      apiCalls: s1.apiCalls,
      billable: s1.budget.billableCalls,
    }).toEqual({ apiCalls: paid1, billable: paid1 });
    const resumed = await run(args(input, 'cut.out.csv', 'store-cut', '--resume'));
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    expect(summary(resumed).apiCalls).toBe(billed() - before.billed);
  }, 120_000);

  it('retries counts the attempts of a call retried after a 503 and then answered with a non-retriable error', async () => {
    const input = await csv('fr.csv', 200, 1, 40_000);
    sandbox.setFaults({ batch: { errorRate: 0.3, errorStatuses: [503] } });
    const before = batchRequests();
    let exit: Exit;
    try {
      // The sandbox has no reference data for FR: 500 country-not-available, not retried.
      exit = await run(args(input, 'fr.out.csv', 'store-fr').map((a) => (a === 'DE' ? 'FR' : a)));
    } finally {
      sandbox.setFaults({});
    }
    const s = summary(exit);
    const received = batchRequests().total - before.total;
    expect(s.apiCalls).toBe(200);
    expect(s.budget.billableCalls).toBe(received);
    expect(s.apiCalls + s.retries).toBe(received);
  }, 120_000);

  it('the HTML report shows the calls the result store saved', async () => {
    const input = await csv('report.csv', 50, 2, 50_000);
    expect((await run(args(input, 'report1.out.csv', 'store-report'))).code).toBe(0);
    const again = await run(args(input, 'report2.out.csv', 'store-report', '--report', join(dir, 'report.html')));
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    expect(summary(again).callsSavedByStore).toBeGreaterThan(0);
    const html = await readFile(join(dir, 'report.html'), 'utf8');
    expect(html).toContain(`data-metric="callsSavedByStore" data-value="${summary(again).callsSavedByStore}"`);
  }, 120_000);
});
