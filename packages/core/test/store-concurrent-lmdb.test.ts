import { spawn } from 'node:child_process';
import { chmod, chown, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '@dq/core/store';
import { useSandbox } from '@dq/test-support/use';

// `dq-store` (README "The result store") on an embedded store that runs are writing to at the
// same time, each a real process: what dq-store removes, what the runs keep, how long a run
// waits, and what the sandbox (over real HTTP; its `billable` counter is what the account pays)
// is paid for.

const CORE = fileURLToPath(new URL('..', import.meta.url));
const DQ_STORE = join(CORE, 'bin', 'dq-store.js');
const dist = (path: string) => JSON.stringify(pathToFileURL(join(CORE, 'dist', path)).href);
const DAY = 86_400_000;

/**
 * A run storing fresh answers for the inputs TEST_PREFIX-0, -1, … (ten every few ms) for TEST_MS;
 * prints how many it stored and the longest a write of the store took.
 */
const WRITER = `import { openStore } from ${dist('store/index.js')};
const store = await openStore(process.env.TEST_STORE);
process.stdout.write('writing\\n');
const end = Date.now() + Number(process.env.TEST_MS);
let longest = 0;
let written = 0;
while (Date.now() < end) {
  const started = Date.now();
  const commit = [];
  for (let j = 0; j < 10; j++, written++) commit.push(store.set(process.env.TEST_PREFIX + '-' + written, { status: 'accepted', resultClass: 'A', requestId: 'fresh-' + written, checkedAt: new Date().toISOString() }));
  await Promise.all(commit);
  longest = Math.max(longest, Date.now() - started);
  await new Promise((resolve) => setTimeout(resolve, 2));
}
await store.close();
process.stdout.write(JSON.stringify({ written, longest }) + '\\n');
`;

/** A connector's run: the store TEST_STORE names, then TEST_ROWS addresses (TEST_FIRST on). */
const RUN = `import { createEngine, createSilentLogger, exitCodeFor } from ${dist('index.js')};
import { openStore } from ${dist('store/index.js')};
try {
  const resultStore = await openStore(process.env.TEST_STORE);
  const engine = createEngine({ mode: 'address', baseUrl: process.env.DQ_BASE_URL, apiKey: process.env.DQ_API_KEY, resultStore, threads: 0, concurrency: 4, logger: createSilentLogger() });
  const rows = Array.from({ length: Number(process.env.TEST_ROWS) }, (_, i) => ({ street: 'Clearstr. ' + i, houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' }));
  let fromStore = 0;
  for (let at = 0; at < rows.length; at += 20) for (const r of await engine.process(rows.slice(at, at + 20))) if (r.source === 'store') fromStore += 1;
  await engine.close();
  await resultStore.close();
  process.stdout.write(JSON.stringify({ fromStore }) + '\\n');
} catch (e) {
  process.stderr.write(e.code === undefined ? String(e.stack) : \`run: \${e.code}: \${e.message}\\n\`);
  process.exitCode = exitCodeFor(e);
}
`;

const sandbox = useSandbox();
const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

let base: string;
const scripts: Record<'writer' | 'run', string> = { writer: '', run: '' };
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'dq-store-concurrent-'));
  // The scripts are run by another user too (the test as root).
  await chmod(base, 0o755);
  for (const [name, text] of [
    ['writer', WRITER],
    ['run', RUN],
  ] as const) {
    scripts[name] = join(base, `${name}.mjs`);
    await writeFile(scripts[name], text);
  }
});
afterAll(async () => base && rm(base, { recursive: true, force: true }));
beforeEach(() => sandbox.reset());

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts node with `args`; `ready` resolves at the first stdout line, `done` when it ends. */
function start(args: string[], env: Record<string, string> = {}, prefix: string[] = []): { ready: Promise<void>; done: Promise<Ran> } {
  const command = [...prefix, process.execPath, ...args];
  const child = spawn(command[0]!, command.slice(1), { env: { ...process.env, ...sandbox.env(), DQ_STORE: '', ...env } });
  let stdout = '';
  let stderr = '';
  let ready!: () => void;
  const readyP = new Promise<void>((resolve) => (ready = resolve));
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes('\n')) ready();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const done = new Promise<Ran>((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      ready();
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { ready: readyP, done };
}

const dqStore = (args: string[], prefix: string[] = []): Promise<Ran> => start([DQ_STORE, ...args], {}, prefix).done;

const answer = (requestId: string, checkedAt = new Date().toISOString()) => ({ status: 'accepted' as const, resultClass: 'A' as const, requestId, checkedAt });

/** A store in `folder` holding `keys`, each checked `ageMs` ago. */
async function fill(folder: string, keys: readonly string[], ageMs: number): Promise<void> {
  const store = (await openStore(folder))!;
  const at = new Date(Date.now() - ageMs).toISOString();
  for (let i = 0; i < keys.length; i += 5_000) await Promise.all(keys.slice(i, i + 5_000).map((k) => Promise.resolve(store.set(k, answer(`old-${k}`, at)))));
  await store.close();
}

/** What the store in `folder` holds for `keys` (requestId, or undefined). */
async function held(folder: string, keys: readonly string[]): Promise<Array<string | undefined>> {
  const store = (await openStore(folder))!;
  try {
    const found = await store.getMany(keys);
    return keys.map((k) => found.get(k)?.requestId);
  } finally {
    await store.close();
  }
}

const keys = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('dq-store prune and clear while a run stores answers', () => {
  it('prune: the fresh answers a run stores for old inputs while prune runs stay in the store', async () => {
    const folder = join(base, 'prune');
    const old = keys('old', 200_000);
    await fill(folder, old, 40 * DAY);
    // A run buying old inputs again (older than its --max-age), one after another, the whole time.
    const writer = start([scripts.writer], { TEST_STORE: folder, TEST_PREFIX: 'old', TEST_MS: '4000' });
    await writer.ready;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const pruned = await dqStore(['prune', '--older-than', '30d', '--store', folder, '--json']);
    const wrote = await writer.done;
    expect([pruned.code, pruned.stderr]).toEqual([0, '']);
    expect([wrote.code, wrote.stderr]).toEqual([0, '']);
    const { written } = JSON.parse(wrote.stdout.split('\n')[1]!) as { written: number };
    // Every answer the run stored is there; the old entries it did not buy again are not.
    const kept = await held(folder, old.slice(0, written));
    expect(kept.filter((id) => id === undefined)).toHaveLength(0);
    expect(await held(folder, old.slice(written))).toEqual(Array(old.length - written).fill(undefined));
  }, 60_000);

  it('clear of a store of 500,000 entries holds up a run writing to it for well under a second', async () => {
    const folder = join(base, 'large');
    await fill(folder, keys('large', 500_000), 0);
    const writer = start([scripts.writer], { TEST_STORE: folder, TEST_PREFIX: 'writer', TEST_MS: '6000' });
    await writer.ready;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cleared = await dqStore(['clear', '--store', folder, '--json']);
    const wrote = await writer.done;
    expect([cleared.code, cleared.stderr]).toEqual([0, '']);
    expect(JSON.parse(cleared.stdout).removed).toBeGreaterThanOrEqual(500_000);
    expect([wrote.code, wrote.stderr]).toEqual([0, '']);
    // One transaction for the whole clear kept every commit of the run waiting for it (0.5 s and more here; 30 ms now).
    const { longest } = JSON.parse(wrote.stdout.split('\n')[1]!) as { longest: number };
    expect(longest).toBeLessThan(250);
  }, 60_000);
});

describe('dq-store while a run buys answers (the sandbox over HTTP)', () => {
  it('info, prune --older-than 0s and clear again and again: the run ends with exit 0, and a rerun pays only for what was removed', async () => {
    const folder = join(base, 'run');
    const rows = 600;
    const run = start([scripts.run], { TEST_STORE: folder, TEST_ROWS: String(rows) });
    let running = true;
    void run.done.then(() => (running = false));
    const trims: Ran[] = [];
    const commands = [['info', '--json'], ['prune', '--older-than', '0s'], ['clear'], ['prune', '--older-than', '1s']];
    for (let i = 0; running || i < commands.length; i++) trims.push(await dqStore([...commands[i % commands.length]!, '--store', folder]));
    const first = await run.done;
    expect([first.code, first.signal, first.stderr]).toEqual([0, null, '']);
    expect(billable()).toBe(rows);
    for (const t of trims) expect([t.code, t.signal, t.stderr]).toEqual([0, null, '']);
    for (const t of trims.filter((_, i) => i % commands.length === 0)) expect(JSON.parse(t.stdout)).toMatchObject({ location: folder });

    const { entries } = JSON.parse((await dqStore(['info', '--json', '--store', folder])).stdout) as { entries: number };
    const again = await start([scripts.run], { TEST_STORE: folder, TEST_ROWS: String(rows) }).done;
    expect([again.code, again.stderr]).toEqual([0, '']);
    expect(JSON.parse(again.stdout)).toEqual({ fromStore: entries });
    expect(billable() - rows).toBe(rows - entries);
  }, 60_000);
});

const isRoot = process.getuid?.() === 0;

describe.runIf(isRoot)('dq-store run by root on the store of another user', () => {
  it("info, prune, clear and init leave no file of root's in it: that user's next run opens it", async () => {
    const nobody = 65534;
    // A store of the user's (made here by root and handed over: a clone of the repository in a
    // private folder such as /root cannot be loaded by nobody).
    const theirs = await mkdtemp(join(tmpdir(), 'dq-store-theirs-'));
    try {
      const store = join(theirs, 'store');
      const made = await start([scripts.writer], { TEST_STORE: store, TEST_PREFIX: 'theirs', TEST_MS: '100' }).done;
      expect([made.code, made.stderr]).toEqual([0, '']);
      for (const path of [theirs, store, ...(await readdir(store)).map((f) => join(store, f))]) await chown(path, nobody, nobody);
      // LMDB's lock file deleted (a cleaner of temporary files, a backup restored without it).
      await rm(join(store, 'results.mdb-lock'));
      for (const command of [['info'], ['prune', '--older-than', '30d'], ['clear'], ['init']]) {
        const r = await dqStore([...command, '--store', store]);
        expect([r.code, r.stderr]).toEqual([0, '']);
      }
      // Every file is the user's: their next run opens the store (files 0600, the folder 0700).
      for (const file of await readdir(store)) {
        const { uid, gid } = await stat(join(store, file));
        expect([file, uid, gid]).toEqual([file, nobody, nobody]);
      }
    } finally {
      await rm(theirs, { recursive: true, force: true });
    }
  }, 30_000);
});
