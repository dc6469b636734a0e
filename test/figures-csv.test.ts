import type { ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runNode, summaryOf, type CliExit } from '@dq/test-support/cli';
import { validateArgs } from '@dq/test-support/csv';
import { useSandbox, useTempDir } from '@dq/test-support/use';

// The cost figures of dq-csv's summary (README "The result store", "Spending cap", and
// packages/csv-processor/README.md "Progress and summary") against what the sandbox billed the
// account and against the rows of the input: real dq-csv processes, the sandbox over real HTTP.

const DQ_CSV = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const ACCOUNT = 'acct';
const dir = useTempDir('dq-figures-csv-');
// No rate limit on the sandbox's side either: the figures, not the pacing, are under test.
const sandbox = useSandbox({ accounts: [{ id: ACCOUNT, apiKeys: ['dq-sandbox-key'], rateLimits: { batch: 0 } }] });

type Exit = CliExit;

const run = (args: string[], started?: (child: ChildProcess) => void): Promise<Exit> => runNode(DQ_CSV, args, sandbox.env(), started);
const summary = (exit: Exit): Record<string, any> => summaryOf(exit);

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

/** Calls made plus calls saved: every row is one or the other. */
/**
 * Runs dq-csv over `input` (outputs and store named after `name`) against answers that take 1.5 s,
 * sends it `signals` 100 ms apart once 40 calls are out, and checks it stopped with exit 75 having
 * paid for at least those 40; returns its exit, the figures before it, and what it paid.
 */
async function stopInFlight(
  input: string,
  name: string,
  signals: NodeJS.Signals[],
): Promise<{ stopped: Exit; before: { billed: number; total: number; ok: number }; paid1: number }> {
  sandbox.setFaults({ batch: { latencyMs: 1500 } });
  const before = { billed: billed(), ...batchRequests() };
  let stopped: Exit;
  try {
    stopped = await run(args(input, `${name}.out.csv`, `store-${name}`, '--concurrency', '40', '--batch-size', '100'), (child) => {
      const poll = setInterval(() => {
        if (batchRequests().total - before.total < 40) return;
        clearInterval(poll);
        signals.forEach((signal, i) => setTimeout(() => child.kill(signal), 100 * i));
      }, 20);
      child.once('close', () => clearInterval(poll));
    });
  } finally {
    sandbox.setFaults({});
  }
  expect(stopped.code, stopped.stderr.slice(-2000)).toBe(75);
  const paid1 = (await billedSettled()) - before.billed;
  expect(paid1).toBeGreaterThanOrEqual(40);
  return { stopped, before, paid1 };
}

const accounted = (s: Record<string, any>): number => s.apiCalls + s.callsSavedByDedup + s.callsSavedByCache + s.callsSavedByStore;

describe('dq-csv: the cost figures against what the account is billed', () => {
  it('a run with repeated inputs pays each distinct input once, as its summary and --dry-run say; the rerun pays nothing', async () => {
    const input = await csv('dups.csv', 300, 3);
    const dry = await run(args(input, 'dups.dry.csv', 'store-dups', '--dry-run'));
    expect(dry.code, dry.stderr.slice(-2000)).toBe(0);
    expect(summary(dry).plan).toMatchObject({ distinct: 300, fromStore: 0, calls: 300 });

    let before = billed();
    const first = await run(args(input, 'dups.out.csv', 'store-dups', '--threads', '0'));
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    const s1 = summary(first);
    expect(billed() - before).toBe(300);
    expect({ apiCalls: s1.apiCalls, retries: s1.retries, billable: s1.budget.billableCalls }).toEqual({ apiCalls: 300, retries: 0, billable: 300 });
    expect(s1.callsSavedByDedup + s1.callsSavedByCache).toBe(600);
    expect(accounted(s1)).toBe(900);

    // 100 new inputs beside the 300 stored: the estimate and the run agree, and only the new ones are paid.
    const mixed = await csv('mixed.csv', 400, 2);
    const dry2 = await run(args(mixed, 'mixed.dry.csv', 'store-dups', '--dry-run'));
    expect(summary(dry2).plan).toMatchObject({ distinct: 400, fromStore: 300, calls: 100 });
    before = billed();
    const second = await run(args(mixed, 'mixed.out.csv', 'store-dups'));
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    const s2 = summary(second);
    expect(billed() - before).toBe(100);
    expect({ apiCalls: s2.apiCalls, billable: s2.budget.billableCalls, rows: s2.rows }).toEqual({ apiCalls: 100, billable: 100, rows: 800 });
    expect(accounted(s2)).toBe(800);

    before = billed();
    const again = await run(args(input, 'dups.again.csv', 'store-dups'));
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const s3 = summary(again);
    expect(billed() - before).toBe(0);
    expect({ apiCalls: s3.apiCalls, billable: s3.budget.billableCalls, storeHitRate: s3.storeHitRate }).toEqual({ apiCalls: 0, billable: 0, storeHitRate: 1 });
    expect(accounted(s3)).toBe(900);
  }, 120_000);

  it('with worker threads the figures are the same', async () => {
    const input = await csv('threads.csv', 500, 2, 2000);
    const before = billed();
    const exit = await run(args(input, 'threads.out.csv', 'store-threads', '--threads', '2'));
    expect(exit.code, exit.stderr.slice(-2000)).toBe(0);
    const s = summary(exit);
    expect(billed() - before).toBe(500);
    expect({ apiCalls: s.apiCalls, billable: s.budget.billableCalls }).toEqual({ apiCalls: 500, billable: 500 });
    expect(accounted(s)).toBe(1000);
  }, 120_000);

  it('503s, resets and truncations: billableCalls counts every attempt the platform received, apiCalls + retries add up to it', async () => {
    const input = await csv('faults.csv', 400, 1, 5000);
    sandbox.setFaults({ batch: { errorRate: 0.2, errorStatuses: [503], resetRate: 0.05, truncateRate: 0.05 } });
    const before = { billed: billed(), ...batchRequests() };
    let exit: Exit;
    try {
      exit = await run(args(input, 'faults.out.csv', 'store-faults'));
    } finally {
      sandbox.setFaults({});
    }
    // 4: some rows stayed unavailable after their retries, past --max-failed's default.
    expect([0, 4], exit.stderr.slice(-2000)).toContain(exit.code);
    const s = summary(exit);
    // The sandbox counts a request when its response is done, which may be just after the client read it.
    await billedSettled();
    const after = batchRequests();
    const received = after.total - before.total;
    expect(s.apiCalls).toBe(400);
    expect(s.budget.billableCalls).toBe(received);
    expect(s.apiCalls + s.retries).toBe(s.budget.billableCalls);
    // The account pays for the answers it got (a truncated one included), not for a 503 or a reset.
    expect(billed() - before.billed).toBe(after.ok - before.ok);
    expect(billed() - before.billed).toBeLessThan(s.budget.billableCalls);
  }, 120_000);

  it('--max-calls stops at the cap, and the run and its resume pay each input once, as their summaries say', async () => {
    const input = await csv('cap.csv', 1200, 1, 10_000);
    const before = billed();
    const stopped = await run(args(input, 'cap.out.csv', 'store-cap', '--max-calls', '700'));
    expect(stopped.code, stopped.stderr.slice(-2000)).toBe(5);
    const s1 = summary(stopped);
    const paid1 = billed() - before;
    expect(paid1).toBe(700);
    expect({ apiCalls: s1.apiCalls, budget: s1.budget }).toMatchObject({ apiCalls: 700, budget: { billableCalls: 700, maxCalls: 700 } });

    const resumed = await run(args(input, 'cap.out.csv', 'store-cap', '--resume'));
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    const s2 = summary(resumed);
    const paid2 = billed() - before - paid1;
    expect(paid1 + paid2).toBe(1200);
    // budget: this run's billable calls; apiCalls: the calls of every run of the file.
    expect({ rows: s2.rows, runs: s2.runs, apiCalls: s2.apiCalls, billable: s2.budget.billableCalls }).toEqual({
      rows: 1200,
      runs: 2,
      apiCalls: paid1 + paid2,
      billable: paid2,
    });
  }, 120_000);

  it('SIGTERM with calls in flight: the run waits for their answers and counts them, and its resume buys none again', async () => {
    const input = await csv('term.csv', 600, 1, 20_000);
    const { stopped, before, paid1 } = await stopInFlight(input, 'term', ['SIGTERM']);
    const s1 = summary(stopped);
    expect({ apiCalls: s1.apiCalls, billable: s1.budget.billableCalls }).toEqual({ apiCalls: paid1, billable: paid1 });

    const resumed = await run(args(input, 'term.out.csv', 'store-term', '--resume'));
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    const s2 = summary(resumed);
    const paid2 = billed() - before.billed - paid1;
    expect(paid1 + paid2).toBe(600);
    expect({ rows: s2.rows, apiCalls: s2.apiCalls, billable: s2.budget.billableCalls }).toEqual({ rows: 600, apiCalls: 600, billable: paid2 });
  }, 120_000);
});

describe('dq-csv cost figures where calls are cut, retried or saved by the store', () => {
  it('a second SIGINT cuts the calls in flight: the platform bills them, and apiCalls counts them', async () => {
    const input = await csv('cut.csv', 600, 1, 30_000);
    const { stopped, before, paid1 } = await stopInFlight(input, 'cut', ['SIGINT', 'SIGINT']);
    const s1 = summary(stopped);
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
