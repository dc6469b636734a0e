import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { usePostgres, withClient } from '@dq/test-support/pg';
import { runCommand, type CommandExit } from '@dq/test-support/cli';
import { useSandbox } from '@dq/test-support/use';

// Machines whose clocks disagree, sharing one result store (README "The result store"): each run
// is a real process whose wall clock libfaketime sets hours or days off (its monotonic clock left
// real), against a real Postgres and the sandbox over real HTTP, whose `billable` counter is what
// the account pays. A skewed clock must neither make anyone buy an answer the store holds and may
// use, nor keep an answer in use past --max-age.

const CORE = fileURLToPath(new URL('..', import.meta.url));
const DQ_STORE = join(CORE, 'bin', 'dq-store.js');
const dist = (path: string) => JSON.stringify(pathToFileURL(join(CORE, 'dist', path)).href);
/** A connector's run: the store TEST_STORE names (with TEST_MAX_AGE_MS, else the default), then TEST_ROWS addresses. */
const RUN = `import { createEngine, createSilentLogger, exitCodeFor } from ${dist('index.js')};
import { openStore } from ${dist('store/index.js')};
try {
  const maxAge = process.env.TEST_MAX_AGE_MS;
  const resultStore = await openStore(process.env.TEST_STORE, maxAge === undefined ? {} : { maxAgeMs: Number(maxAge) });
  const engine = createEngine({ mode: 'address', baseUrl: process.env.DQ_BASE_URL, apiKey: process.env.DQ_API_KEY, resultStore, threads: 0, logger: createSilentLogger() });
  const rows = Array.from({ length: Number(process.env.TEST_ROWS) }, (_, i) => ({ street: 'Clockstr. ' + i, houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' }));
  const results = await engine.process(rows);
  await engine.close();
  await resultStore.close();
  process.stdout.write(JSON.stringify({ sources: results.map((r) => r.source) }) + '\\n');
} catch (e) {
  process.stderr.write(e.code === undefined ? String(e.stack) : \`run: \${e.code}: \${e.message}\\n\`);
  process.exitCode = exitCodeFor(e);
}
`;

const ROWS = 4;
const DAY = 86_400_000;
const sandbox = useSandbox();
const server = usePostgres();
const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

let base: string;
let script: string;
beforeAll(async () => {
  // libfaketime sets each process's wall clock; without it these tests cannot say anything.
  const probe = spawnSync('faketime', ['-f', '+2d', process.execPath, '-e', 'process.stdout.write(String(Date.now()))'], { encoding: 'utf8' });
  const skew = Number(probe.stdout) - Date.now();
  if (probe.error !== undefined || !(skew > DAY)) {
    throw new Error(
      `these tests need libfaketime (apt-get install faketime): faketime -f +2d node did not run 2 days ahead (${probe.error?.message ?? probe.stderr})`,
    );
  }
  base = await mkdtemp(join(tmpdir(), 'dq-clock-'));
  script = join(base, 'run.mjs');
  await writeFile(script, RUN);
});
afterAll(async () => base && rm(base, { recursive: true, force: true }));
beforeEach(() => sandbox.reset());

/** Runs `args` with node under a wall clock `offset` off (libfaketime's `-f` syntax: `+2d`, `-5h`, `+0`). */
function at(offset: string, args: string[], env: Record<string, string> = {}): Promise<CommandExit> {
  return runCommand(['faketime', '-f', offset, process.execPath, ...args], {
    env: { ...sandbox.env(), DQ_STORE: '', FAKETIME_DONT_FAKE_MONOTONIC: '1', ...env },
  });
}

/** A run of ROWS rows on a machine whose clock is `offset` off; returns what it paid and where its answers came from. */
async function run(offset: string, store: string, maxAgeMs?: number): Promise<{ paid: number; sources: string[] }> {
  const before = billable();
  const env: Record<string, string> = { TEST_STORE: store, TEST_ROWS: String(ROWS) };
  if (maxAgeMs !== undefined) env['TEST_MAX_AGE_MS'] = String(maxAgeMs);
  const r = await at(offset, [script], env);
  expect([r.code, r.stderr], r.stderr).toEqual([0, '']);
  const { sources } = JSON.parse(r.stdout) as { sources: string[] };
  return { paid: billable() - before, sources };
}

const dqStore = async (offset: string, args: string[]): Promise<CommandExit> => at(offset, [DQ_STORE, ...args]);
const fromStore = Array<string>(ROWS).fill('store');

describe('a Postgres store shared by machines whose clocks disagree', () => {
  it('a writer days behind: the others reuse its answers, and it reuses theirs (no one pays twice)', async () => {
    const store = await server.createDatabase();
    // --max-age 1d: the answers are minutes old by every clock that matters (the database's).
    expect((await run('-2d', store, DAY)).paid).toBe(ROWS);
    expect(await run('+0', store, DAY)).toEqual({ paid: 0, sources: fromStore });
    expect(await run('-2d', store, DAY)).toEqual({ paid: 0, sources: fromStore });
  });

  it('a writer days ahead: the others reuse its answers', async () => {
    const store = await server.createDatabase();
    expect((await run('+3d', store)).paid).toBe(ROWS);
    expect(await run('+0', store)).toEqual({ paid: 0, sources: fromStore });
    expect(await run('-1d', store)).toEqual({ paid: 0, sources: fromStore });
  });

  it('a writer hours ahead: its answers are not reused past --max-age', async () => {
    const store = await server.createDatabase();
    expect((await run('+5h', store)).paid).toBe(ROWS);
    // Answers 3 s old, against a --max-age of 2 s: bought again, whoever's clock stamped them.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await run('+0', store, 2000)).paid).toBe(ROWS);
  });

  it('dq-store prune on a machine days ahead keeps what is young, and info shows the database times', async () => {
    const store = await server.createDatabase();
    await run('+0', store);
    const pruned = await dqStore('+2d', ['prune', '--older-than', '1d', '--store', store, '--json']);
    expect([pruned.code, pruned.stderr]).toEqual([0, '']);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ command: 'prune', removed: 0 });
    const info = await dqStore('-3d', ['info', '--store', store, '--json']);
    const { entries, oldest, newest } = JSON.parse(info.stdout) as { entries: number; oldest: string; newest: string };
    expect(entries).toBe(ROWS);
    for (const t of [oldest, newest]) expect(Math.abs(Date.parse(t) - Date.now())).toBeLessThan(60_000);
    expect(await run('+0', store)).toEqual({ paid: 0, sources: fromStore });
  });

  it('an entry dated beyond a day ahead of the database is not used, and prune removes it', async () => {
    const store = await server.createDatabase();
    await run('+0', store);
    await withClient(store, (c) => c.query(`UPDATE dq_store.results SET checked_at = now() + interval '400 days'`));
    expect((await run('+400d', store)).paid).toBe(ROWS);
    await withClient(store, (c) => c.query(`UPDATE dq_store.results SET checked_at = now() + interval '400 days'`));
    const pruned = await dqStore('+0', ['prune', '--older-than', '30d', '--store', store, '--json']);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ removed: ROWS });
  });
});

describe('an embedded store on a machine whose clock was set ahead, then put right', () => {
  it('answers stamped days ahead are not reused past --max-age, and prune removes them', async () => {
    const store = join(base, 'lmdb-ahead');
    expect((await run('+2d', store)).paid).toBe(ROWS);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    // 3 s old, --max-age 2 s: bought again, though the entries claim to be checked in two days.
    expect((await run('+0', store, 2000)).paid).toBe(ROWS);
    expect(await run('+0', store, 60_000)).toEqual({ paid: 0, sources: fromStore });
    await run('+2d', store, 0);
    const pruned = await dqStore('+0', ['prune', '--older-than', '30d', '--store', store, '--json']);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ removed: ROWS });
  });

  it('a clock a few hours off still reuses its own answers', async () => {
    const store = join(base, 'lmdb-hours');
    expect((await run('+5h', store)).paid).toBe(ROWS);
    expect(await run('+0', store)).toEqual({ paid: 0, sources: fromStore });
  });
});
