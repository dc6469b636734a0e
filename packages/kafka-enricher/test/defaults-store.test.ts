import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killIfRunning, produce, readResults, requiredArgs, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Names, Running } from '@dq/test-support/kafka';
import { ageStoreEntries, DAY_MS } from '@dq/test-support/store';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { createTopics } from './topics.js';

// dq-kafka's result store as a user gets it: --store and --max-age left out, so the store is the
// folder $XDG_CACHE_HOME/dq-connectors/store (test/support/isolated-store.ts gives each test an
// XDG_CACHE_HOME of its own) and stored answers are reused for 30 days (README "The result store").
const N = 40;
const kafka = useKafka();
const sandbox = useSandbox();
let run: Running | undefined;

const billable = (): number => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

/** `N` messages, each with an address of its own (one billable call each). */
const messages = Array.from({ length: N }, (_, i) => ({
  key: `k${i % 8}`,
  value: JSON.stringify({ id: i, address: { street: 'Hauptstraße', houseNumber: String(i + 1), postalCode: '10115', locality: 'Berlin', country: 'DE' } }),
}));

/** dq-kafka with the required flags only, over `input` with a group and output topics of its own, until every message is out; stopped with SIGTERM. */
async function enrichAll(input: string) {
  const names: Names = { input, output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() };
  // Output and DLQ topics exist, as dq-kafka without --create-topics requires.
  await createTopics(kafka.brokers, [names.output, names.dlq]);
  run = spawnEnricher(requiredArgs(kafka.brokers, names), sandbox.env());
  try {
    const { outs } = await readResults(kafka.brokers, names, N, 0, 60_000);
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr().slice(-2000)).toEqual({ code: 0, signal: null });
    return outs.map((o) => JSON.parse(o.value!) as { id: number; dq: { status: string; checkedAt?: string } });
  } finally {
    killIfRunning(run);
  }
}

describe('dq-kafka enrich without --store and --max-age', () => {
  it('keeps its answers in $XDG_CACHE_HOME/dq-connectors/store (0700 folder, 0600 files); reuses one checked 29 days ago (its check time in the dq member) and buys again one checked 31 days ago', async () => {
    const input = uniqueTopic('in');
    await produce(kafka.brokers, input, messages);

    const first = await enrichAll(input);
    expect(new Set(first.map((m) => m.id)).size).toBe(N);
    const paid = billable();
    expect(paid).toBe(N);

    const store = join(process.env['XDG_CACHE_HOME']!, 'dq-connectors', 'store');
    expect((await stat(store)).mode & 0o777).toBe(0o700);
    const files = await readdir(store);
    expect(files).toContain('results.mdb');
    for (const file of files) expect((await stat(join(store, file))).mode & 0o777, file).toBe(0o600);

    const ages = await ageStoreEntries(store, (i) => (i % 2 === 0 ? 31 : 29));
    expect((ages.get(31) ?? 0) + (ages.get(29) ?? 0)).toBe(N);

    // Another group over the same topic: only the answers older than 30 days are bought again.
    const second = await enrichAll(input);
    expect(billable() - paid).toBe(ages.get(31));
    const byId = new Map(second.map((m) => [m.id, m.dq]));
    expect(byId.size).toBe(N);
    const days = [...byId.values()].map((dq) => Math.round((Date.now() - Date.parse(dq.checkedAt!)) / DAY_MS));
    expect(days.filter((d) => d === 29)).toHaveLength(ages.get(29)!);
    expect(days.filter((d) => d === 0)).toHaveLength(ages.get(31)!);
  }, 90_000);
});
