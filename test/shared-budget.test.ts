import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { usePostgres } from '@dq/test-support/pg';
import { startSandboxProcess, type SandboxProcess } from '@dq/test-support/sandbox-process';
import { startKafka, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import { useTempDir } from '@dq/test-support/use';
import { cliArgs, killIfRunning, metricsPort, metricValue, produce, readResults, spawnEnricher, waitUntilUp, type Running } from '@dq/test-support/kafka';
import { runNode, summaryOf, type CliExit } from '@dq/test-support/cli';
import { validateArgs } from '@dq/test-support/csv';

// One platform account, one rate limit (batch/sync: exactly 100 in any sliding second, nothing
// forgiven, the sandbox's default), and several processes of different connectors using it at
// once, each with its default engine settings: only a budget they share keeps them under it.
const DQ_PG = fileURLToPath(new URL('../packages/postgres-cleanser/dist/cli.js', import.meta.url));
const DQ_CSV = fileURLToPath(new URL('../packages/csv-processor/dist/cli.js', import.meta.url));
const LIMIT = 100;

const dir = useTempDir('dq-shared-budget-');
const server = usePostgres();

/** dq-csv `validate` arguments for a `strasse;nr;plz;ort` file of {@link addresses}, then `more`. */
function csvArgs(input: string, output: string, ...more: string[]): string[] {
  return validateArgs(input, output, 'street=strasse,houseNumber=nr,postalCode=plz,locality=ort', ...more);
}

type Exit = CliExit;

const run = (cli: string, args: string[], env: Record<string, string>): Promise<Exit> => runNode(cli, args, env);
const summary = (exit: Exit): Record<string, any> => summaryOf(exit);

/** `n` distinct addresses (one call each), as CSV lines `street;number;postcode;town`. */
function addresses(n: number, street: string): string[][] {
  return Array.from({ length: n }, (_, i) => [street, String(i + 1), '10115', 'Berlin']);
}

/** Samples the sandbox's batch/sync counters until `stop()`; `rate(from, to)` is 200-answers per second between two moments. */
function sampler(sandbox: SandboxProcess) {
  const samples: { at: number; ok: number; tooMany: number }[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const sent = performance.now();
      const stats = await sandbox.stats();
      const at = (sent + performance.now()) / 2;
      const batch = stats.requests['batch']?.byStatus ?? {};
      samples.push({ at, ok: batch['200'] ?? 0, tooMany: batch['429'] ?? 0 });
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const nearest = (t: number) => samples.reduce((best, s) => (Math.abs(s.at - t) < Math.abs(best.at - t) ? s : best));
  return {
    async stop() {
      running = false;
      await loop;
    },
    rate(from: number, to: number): { perSecond: number; seconds: number } {
      const a = nearest(from);
      const b = nearest(to);
      return { perSecond: ((b.ok - a.ok) * 1000) / (b.at - a.at), seconds: (b.at - a.at) / 1000 };
    },
  };
}

/**
 * The reference, in the same conditions: one dq-csv process alone, on a budget of its own, against
 * the same strict limit (calls per second, at most the limit). A strict limit costs every client
 * some of its rate when answers come late (a loaded machine); sharing the budget must cost next to
 * nothing more.
 */
async function aloneRate(sandbox: SandboxProcess, input: string, env: Record<string, string>): Promise<number> {
  await fetch(`${sandbox.url}/__admin/reset`, { method: 'POST' });
  const alone = await run(DQ_CSV, csvArgs(input, join(dir, `alone-${Date.now()}.csv`), '--budget', 'off'), env);
  expect(alone.code, alone.stderr.slice(-2000)).toBe(0);
  const stats = (await sandbox.stats()).requests['batch']?.byStatus ?? {};
  expect(stats['429'] ?? 0).toBe(0);
  return Math.min(LIMIT, ((stats['200'] ?? 0) * 1000) / summary(alone).durationMs);
}

/**
 * {@link aloneRate}, measured once for the file: both tests' dq-csv jobs are the same file of
 * `CSV_ROWS` calls against the same sandbox configuration, so one reference serves both (the
 * second test, run alone, measures it itself).
 */
let reference: Promise<number> | undefined;
function referenceRate(sandbox: SandboxProcess, input: string, env: Record<string, string>): Promise<number> {
  reference ??= aloneRate(sandbox, input, env).catch((e: unknown) => {
    reference = undefined;
    throw e;
  });
  return reference;
}

describe('one rate budget for the account, shared by every process', () => {
  it('two dq-pg processes of one run and a dq-csv job together keep to 100/s with no 429, as fast as one process alone on a budget of its own', async () => {
    const db = await server.createDatabase();
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    // Enough calls for each side that the common busy time is long enough to measure whatever
    // their shares: the budget serves whichever process asks first, and the shares swing (measured:
    // dq-csv up to 60 % of the rate while all three ran, the two dq-pg together up to 80 %); with
    // 2,000 and 1,000 rows the first to finish ended after ~20 s, 14 s of common time in CI.
    const TABLE_ROWS = 3000;
    const CSV_ROWS = 1500;
    try {
      await client.query(`CREATE TABLE customers (id bigint PRIMARY KEY, street text, house_number text, postal_code text, city text)`);
      await client.query(`INSERT INTO customers SELECT g, 'Lindenweg', g::text, '10115', 'Berlin' FROM generate_series(1, $1::int) g`, [TABLE_ROWS]);
    } finally {
      await client.end();
    }
    const input = join(dir, 'in.csv');
    await writeFile(input, ['strasse;nr;plz;ort', ...addresses(CSV_ROWS, 'Hauptstraße').map((r) => r.join(';'))].join('\n') + '\n');

    const sandbox = await startSandboxProcess({ accounts: [{ id: 'acct', apiKeys: [DEFAULT_API_KEY] }] });
    const counters = sampler(sandbox);
    try {
      const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY, DQ_DATABASE_URL: db };
      const init = await run(DQ_PG, ['init'], env);
      expect(init.code, init.stderr).toBe(0);
      // Small pages and claims, so that the two processes split a table of a few thousand rows.
      const cleanse = [
        'cleanse',
        '--table',
        'public.customers',
        '--key',
        'id',
        '--country',
        'DE',
        '--run-id',
        'shared-budget',
        '--batch-size',
        '100',
        '--pages-per-claim',
        '2',
        '--map',
        'street=street,houseNumber=house_number,postalCode=postal_code,locality=city',
      ];
      const started = performance.now();
      // dq-pg shares the budget through its own database without being told; dq-csv is pointed at it.
      const [pgA, pgB, csv] = await Promise.all([
        run(DQ_PG, cleanse, env),
        run(DQ_PG, cleanse, env),
        run(DQ_CSV, csvArgs(input, join(dir, 'out.csv'), '--account-db', db), env),
      ]);
      await counters.stop();
      for (const exit of [pgA, pgB, csv]) expect(exit.code, exit.stderr.slice(-2000)).toBe(0);
      const stats = await sandbox.stats();
      const batch = stats.requests['batch']?.byStatus ?? {};
      expect(batch['429'] ?? 0).toBe(0);
      expect(batch['200']).toBe(TABLE_ROWS + CSV_ROWS);

      const [sa, sb, sc] = [summary(pgA), summary(pgB), summary(csv)];
      for (const s of [sa, sb, sc]) expect(s.budget).toMatchObject({ scope: 'shared' });
      expect(new Set([sa.budget.account, sb.budget.account, sc.budget.account]).size).toBe(1);
      expect(sa.budget.account).toMatch(/^key-[0-9a-f]{16}$/);
      // Each had a real share while the three ran together.
      const calls = [sa.budget.billableCalls, sb.budget.billableCalls, sc.budget.billableCalls];
      expect(calls.reduce((a, b) => a + b, 0)).toBe(TABLE_ROWS + CSV_ROWS);
      for (const c of calls) expect(c).toBeGreaterThan(0.2 * (TABLE_ROWS + CSV_ROWS));

      // The common busy time: from when all three are surely calling (start-up takes a few seconds
      // on a loaded machine) to shortly before the first of them ended.
      const from = started + 5000;
      const to = Math.min(pgA.endedAt, pgB.endedAt, csv.endedAt) - 1000;
      const { perSecond, seconds } = counters.rate(from, to);
      // Who called how much and ended when: what a window too short to measure comes from.
      const shares = `calls dq-pg ${calls[0]} and ${calls[1]}, dq-csv ${calls[2]}; ended after ${[pgA, pgB, csv].map((e) => ((e.endedAt - started) / 1000).toFixed(1)).join(', ')} s`;
      expect(seconds, shares).toBeGreaterThan(15);
      expect(perSecond).toBeLessThanOrEqual(LIMIT);

      const reference = await referenceRate(sandbox, input, env);
      console.log(`shared: ${perSecond.toFixed(1)}/s over ${seconds.toFixed(1)} s (${shares}); one process alone: ${reference.toFixed(1)}/s`);
      expect(perSecond).toBeGreaterThanOrEqual(0.95 * reference);
      expect(perSecond).toBeGreaterThan(0.5 * LIMIT);
    } finally {
      await counters.stop();
      await sandbox.stop();
    }
  }, 240_000);

  it('two dq-kafka instances of one group and a dq-csv job together keep to 100/s with no 429, as fast as one process alone', async () => {
    const db = await server.createDatabase();
    const kafka = await startKafka();
    const names = { input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
    const MESSAGES = 2000;
    // dq-csv gets the budget's slots sooner than the consumers, which wait on fetches: with 1,000
    // rows it finished after 15 s on a busy machine, too soon for a common window to measure.
    const CSV_ROWS = 1500;
    const input = join(dir, 'in-kafka.csv');
    await writeFile(input, ['strasse;nr;plz;ort', ...addresses(CSV_ROWS, 'Hauptstraße').map((r) => r.join(';'))].join('\n') + '\n');
    const messages = addresses(MESSAGES, 'Lindenweg').map(([street, houseNumber, postalCode, locality], i) => ({
      key: `k${i % 50}`,
      value: JSON.stringify({ id: i, address: { street, houseNumber, postalCode, locality, country: 'DE' } }),
    }));
    // A few messages create the input topic (dq-kafka refuses a missing one); the rest are produced
    // once both instances are in the group, with dq-csv's start. Produced all at first, the first
    // instance called alone while the second joined (over 10 s on a busy machine), and the kafka
    // side finished too early for a common busy time to measure.
    const EARLY = 40;
    await produce(kafka.brokers, names.input, messages.slice(0, EARLY));
    const sandbox = await startSandboxProcess({ accounts: [{ id: 'acct', apiKeys: [DEFAULT_API_KEY] }] });
    const counters = sampler(sandbox);
    const enrichers: Running[] = [];
    try {
      const env = { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
      for (let i = 0; i < 2; i++) enrichers.push(spawnEnricher(cliArgs(kafka.brokers, names, ['--account-db', db, '--metrics-port', '0']), env));
      const results = readResults(kafka.brokers, names, MESSAGES, 0, 180_000).then(() => performance.now());
      // dq-csv starts once both instances are in the group: the second one's join completes the
      // rebalance that splits the partitions between them (on a busy machine that can take several
      // seconds, while the first one calls alone), so the three then share the budget.
      const ports = await Promise.all(enrichers.map((e) => metricsPort(e)));
      for (const [i, p] of ports.entries()) await waitUntilUp(enrichers[i]!, p);
      const started = performance.now();
      const [csv, kafkaDoneAt] = await Promise.all([
        run(DQ_CSV, csvArgs(input, join(dir, 'out-kafka.csv'), '--account-db', db), env),
        results,
        produce(kafka.brokers, names.input, messages.slice(EARLY)),
      ]);
      await counters.stop();
      expect(csv.code, csv.stderr.slice(-2000)).toBe(0);
      const shares = await Promise.all(ports.map((p) => metricValue(p, 'dq_kafka_billable_calls_total')));
      for (const p of ports) expect(await metricValue(p, 'dq_kafka_rate_budget_shared')).toBe(1);
      for (const e of enrichers) e.child.kill('SIGTERM');
      const exits = await Promise.all(enrichers.map((e) => e.exited));
      for (const [i, e] of exits.entries()) expect(e.code, enrichers[i]!.stderr().slice(-2000)).toBe(0);

      const batch = (await sandbox.stats()).requests['batch']?.byStatus ?? {};
      expect(batch['429'] ?? 0).toBe(0);
      // Every input once; when the second instance's join moves partitions while calls are in
      // flight, the new owner may call those again (at least once: their answers were not stored
      // yet), at most the calls one instance has in flight (--concurrency 32).
      expect(batch['200']).toBeGreaterThanOrEqual(MESSAGES + CSV_ROWS);
      expect(batch['200']).toBeLessThanOrEqual(MESSAGES + CSV_ROWS + 32);
      expect(summary(csv).budget).toMatchObject({ scope: 'shared', billableCalls: CSV_ROWS });
      // Each had a real share while the three ran together.
      for (const n of shares) expect(n).toBeGreaterThan(0.2 * (MESSAGES + CSV_ROWS));

      const from = started + 3000;
      const to = Math.min(csv.endedAt, kafkaDoneAt) - 1000;
      const { perSecond, seconds } = counters.rate(from, to);
      const ended = `calls dq-kafka ${shares.join(' and ')}, dq-csv ${CSV_ROWS}; dq-csv ended after ${((csv.endedAt - started) / 1000).toFixed(1)} s, dq-kafka after ${((kafkaDoneAt - started) / 1000).toFixed(1)} s`;
      expect(seconds, ended).toBeGreaterThan(12);
      expect(perSecond).toBeLessThanOrEqual(LIMIT);
      const reference = await referenceRate(sandbox, input, env);
      console.log(`shared (kafka): ${perSecond.toFixed(1)}/s over ${seconds.toFixed(1)} s (${ended}); one process alone: ${reference.toFixed(1)}/s`);
      expect(perSecond).toBeGreaterThanOrEqual(0.95 * reference);
      expect(perSecond).toBeGreaterThan(0.5 * LIMIT);
    } finally {
      for (const e of enrichers) killIfRunning(e);
      await counters.stop();
      await sandbox.stop();
      await kafka.stop();
    }
  }, 300_000);

  it('a 429 seen by one process holds back and slows the other processes of the account', async () => {
    const db = await server.createDatabase();
    // Process A talks to a platform that answers every call with 429 and Retry-After 2 s; process
    // B, of the same account (--account), to one that answers at once. Only A sees the 429s.
    const refusing = await startSandboxProcess({
      accounts: [{ id: 'acct', apiKeys: [DEFAULT_API_KEY] }],
      faults: { batch: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 2 } },
    });
    const answering = await startSandboxProcess({ accounts: [{ id: 'acct', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0 } }] });
    const csvIn = async (name: string, rows: number): Promise<string> => {
      const file = join(dir, name);
      await writeFile(file, ['strasse;nr;plz;ort', ...addresses(rows, 'Birkenweg').map((r) => r.join(';'))].join('\n') + '\n');
      return file;
    };
    const [inA, inB] = await Promise.all([csvIn('a.csv', 200), csvIn('b.csv', 150)]);
    const args = (input: string, output: string, account: string) => csvArgs(input, join(dir, output), '--budget', db, '--account', account);
    const child = spawn(process.execPath, [DQ_CSV, ...args(inA, 'a.out.csv', 'acme')], {
      env: { ...process.env, DQ_BASE_URL: refusing.url, DQ_API_KEY: DEFAULT_API_KEY },
      stdio: 'ignore',
    });
    try {
      // A has been refused at least once.
      const deadline = performance.now() + 60_000;
      while (((await refusing.stats()).requests['batch']?.byStatus['429'] ?? 0) === 0) {
        expect(performance.now()).toBeLessThan(deadline);
        await new Promise((r) => setTimeout(r, 100));
      }
      const envB = { DQ_BASE_URL: answering.url, DQ_API_KEY: DEFAULT_API_KEY };
      const held = await run(DQ_CSV, args(inB, 'b.out.csv', 'acme'), envB);
      expect(held.code, held.stderr.slice(-2000)).toBe(0);
      child.kill('SIGKILL');
      // The same job on an account nobody else is using right now.
      const free = await run(DQ_CSV, args(inB, 'b2.out.csv', 'initech'), envB);
      expect(free.code, free.stderr.slice(-2000)).toBe(0);
      const [heldMs, freeMs] = [summary(held).durationMs as number, summary(free).durationMs as number];
      console.log(`150 calls while another process of the account meets 429s: ${heldMs} ms; alone: ${freeMs} ms`);
      expect(heldMs).toBeGreaterThan(2 * freeMs);
      expect(heldMs).toBeGreaterThan(2000); // at least one Retry-After
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await refusing.stop();
      await answering.stop();
    }
  }, 240_000);
});
