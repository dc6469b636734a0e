import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '@dq/sandbox';
import type { Message } from 'kafkajs';
import { cliArgs, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import { useKafka, useSandbox } from '@dq/test-support/use';
import { askAddresses, askCompany, companyInputs, labelledAddresses } from '@dq/test-support/known-answers';
import type { AddressFields, KnownAddressAnswer, KnownCompanyAnswer } from '@dq/test-support/known-answers';
import { inputOffsets, killIfRunning, produce, readTopic, spawnEnricher } from '@dq/test-support/kafka';
import type { Read, Running } from '@dq/test-support/kafka';

// What dq-kafka writes into each enriched message's `dq` member, against answers worked out
// without the engine: each labelled input asked of the sandbox's HTTP API on its own. Every output
// is matched to its input by the input offset it names and by its key, so a field written under
// another name, or a result attached to the neighbouring message, fails here.

const kafka = useKafka();
const sandbox = useSandbox({ accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { batch: 0, validate: 0 } }] });
let run: Running | undefined;
afterAll(() => killIfRunning(run));

interface Enriched {
  input: Read;
  output: Read;
  value: Record<string, unknown> & { dq: Record<string, any> };
}

/**
 * Produces `values` (keys `m<i>`, header `x-seq`), runs dq-kafka with `map` until every message is in
 * the output, stops it with SIGTERM (exit 0) and returns each output next to the input it names.
 */
async function enrich(values: unknown[], map: string, extra: string[] = []): Promise<Enriched[]> {
  const [input, output, dlq, group] = [uniqueTopic('in'), uniqueTopic('out'), uniqueTopic('dlq'), uniqueGroup()];
  const messages: Message[] = values.map((v, i) => ({ key: `m${i}`, headers: { 'x-seq': String(i) }, value: JSON.stringify(v) }));
  await produce(kafka.brokers, input, messages);
  run = spawnEnricher(cliArgs(kafka.brokers, { input, output, dlq, group }, extra, map), sandbox.env());
  const [inputs, outs] = await Promise.all([
    inputOffsets(kafka.brokers, input, values.length),
    readTopic(kafka.brokers, output, (all) => all.length >= values.length, 120_000),
  ]);
  run.child.kill('SIGTERM');
  expect(await run.exited, run.stderr()).toEqual({ code: 0, signal: null });
  expect(outs).toHaveLength(values.length);
  const byPosition = new Map(inputs.map((m) => [`${m.partition}:${m.offset}`, m]));
  return outs.map((o) => {
    const value = JSON.parse(o.value!) as Enriched['value'];
    const source = byPosition.get(`${value.dq.source.partition}:${value.dq.source.offset}`);
    if (source === undefined) throw new Error(`output names input ${JSON.stringify(value.dq.source)}, which does not exist`);
    return { input: source, output: o, value };
  });
}

/** The request fields a message layout carries, and the map for it. */
const POINTER: Record<keyof AddressFields, string> = {
  street: '/a/street',
  houseNumber: '/a/no',
  addressLine: '/a/line',
  postalCode: '/a/zip',
  locality: '/a/city',
  localityLine: '/a/cityLine',
  country: '/a/cc',
};

describe("dq-kafka writes the platform's answer for each message into that message", () => {
  it('address mode: status, class, every corrected field and the candidates of each message, for separate fields, addressLine and localityLine', async () => {
    const labelled = labelledAddresses(120);
    // A mapped field must be present in every message, so each layout of the fields is its own run.
    const layouts = new Map<string, typeof labelled>();
    for (const l of labelled) {
      const layout = Object.keys(l.fields).sort().join(',');
      layouts.set(layout, [...(layouts.get(layout) ?? []), l]);
    }
    const runs = [...layouts.entries()].sort((a, b) => b[1].length - a[1].length).slice(0, 4);
    const fieldsSeen = new Set(runs.flatMap(([layout]) => layout.split(',')));
    expect(fieldsSeen).toEqual(new Set(['street', 'houseNumber', 'addressLine', 'postalCode', 'locality', 'localityLine', 'country']));

    const classes = new Set<string>();
    let several = 0;
    for (const [layout, group] of runs) {
      const fields = layout.split(',') as (keyof AddressFields)[];
      const map = fields.map((f) => `${f}=${POINTER[f]}`).join(',');
      const values = group.map((l, i) => ({
        id: i,
        a: Object.fromEntries(fields.map((f) => [POINTER[f].slice(3), l.fields[f]])),
      }));
      const expected: KnownAddressAnswer[] = await askAddresses(
        sandbox.url,
        DEFAULT_API_KEY,
        group.map((l) => l.fields),
      );
      const enriched = await enrich(values, map);
      const seqs = new Set<number>();
      for (const { input, output, value } of enriched) {
        const seq = Number(input.headers['x-seq']);
        seqs.add(seq);
        const want = expected[seq]!;
        const at = `${layout} message ${seq} (${group[seq]!.variant}: ${JSON.stringify(group[seq]!.fields)})`;
        classes.add(want.resultClass);
        if (want.candidates.length > 1) several += 1;
        // The output is that input: its key and headers, and its original members unchanged.
        expect(output.key, at).toBe(input.key);
        expect(output.headers['x-seq'], at).toBe(String(seq));
        const { dq, ...original } = value;
        expect(original, at).toEqual(JSON.parse(input.value!));
        const best = want.candidates[0];
        expect(
          {
            status: dq.status,
            class: dq.class,
            address: dq.address === undefined ? undefined : pick(dq.address),
            candidates: dq.candidates?.map(pick),
          },
          at,
        ).toEqual({
          status: want.status,
          class: want.resultClass,
          address: best === undefined ? undefined : pick(best),
          candidates: want.resultClass === 'E' ? want.candidates.map(pick) : undefined,
        });
        expect(dq.requestId, at).toBeTruthy();
      }
      expect(seqs.size).toBe(group.length);
    }
    expect(classes).toEqual(new Set(['A', 'B', 'C', 'D', 'E', 'F']));
    expect(several).toBeGreaterThan(0);
  }, 300_000);

  it('--include: coordinates and field metadata in dq.address; the store answers a run only with answers asked with the same --include', async () => {
    const N = 20;
    const values = Array.from({ length: N }, (_, i) => ({ id: i, a: { street: 'Lindenweg', no: String(i + 1), zip: '10115', city: 'Berlin', cc: 'DE' } }));
    const map = 'street=/a/street,houseNumber=/a/no,postalCode=/a/zip,locality=/a/city,country=/a/cc';
    const calls = (): number => sandbox.stats().requests['batch']?.total ?? 0;
    const withAddress = (runs: Enriched[]) => runs.filter((e) => e.value.dq.address !== undefined);

    const before = calls();
    const plain = await enrich(values, map);
    expect(calls() - before).toBe(N);
    expect(withAddress(plain).length).toBeGreaterThan(0);
    for (const { value } of plain) expect(value.dq.address?.coordinates).toBeUndefined();

    // Asked with --include: not answered from the store's answers without coordinates.
    const included = await enrich(values, map, ['--include', 'coordinates-wgs84,metadata']);
    expect(calls() - before).toBe(2 * N);
    expect(withAddress(included).length).toBe(withAddress(plain).length);
    for (const { value } of withAddress(included)) {
      expect(value.dq.address.coordinates.wgs84).toMatchObject({ lat: expect.any(Number), lon: expect.any(Number) });
      expect(value.dq.address._meta.fields.street.status).toEqual(expect.any(String));
    }

    // The same --include again: every answer from the store, coordinates included.
    const again = await enrich(values, map, ['--include', 'coordinates-wgs84,metadata']);
    expect(calls() - before).toBe(2 * N);
    const seq = (e: Enriched): number => Number(e.input.headers['x-seq']);
    const bySeq = new Map(included.map((e) => [seq(e), e.value.dq.address]));
    for (const e of again) expect(e.value.dq.address).toEqual(bySeq.get(seq(e)));
  }, 120_000);

  it('company mode: status, the best hit and every hit of a review for each message', async () => {
    const inputs = companyInputs(8).map((c) => ({ company: c.company ?? '' }));
    const expected: KnownCompanyAnswer[] = await Promise.all(inputs.map((c) => askCompany(sandbox.url, DEFAULT_API_KEY, c)));
    expect(new Set(expected.map((e) => e.status))).toEqual(new Set(['accepted', 'review', 'invalid']));
    const enriched = await enrich(
      inputs.map((c, i) => ({ id: i, firm: { name: c.company } })),
      'company=/firm/name',
      ['--mode', 'company'],
    );
    for (const { input, output, value } of enriched) {
      const seq = Number(input.headers['x-seq']);
      const want = expected[seq]!;
      const at = `message ${seq} (${inputs[seq]!.company})`;
      expect(output.key, at).toBe(input.key);
      expect(value.id, at).toBe(seq);
      expect({ status: value.dq.status, company: value.dq.company, hits: value.dq.hits, candidates: value.dq.candidates }, at).toEqual({
        status: want.status,
        company: want.hits[0] && emitted(want.hits[0]),
        hits: want.hits.length,
        candidates: want.status === 'review' ? want.hits.map(emitted) : undefined,
      });
    }
  }, 120_000);
});

/** A hit as dq-kafka emits it: the platform's JSON-number postcode as the register's five digits (4103 → "04103"). */
function emitted(hit: KnownCompanyAnswer['hits'][number]): object {
  return hit.zip === undefined ? hit : { ...hit, zip: String(hit.zip).padStart(5, '0') };
}

/** The candidate fields a user reads (coordinates and `_meta` are not asked for). */
function pick(candidate: object): Record<string, unknown> {
  const c = candidate as Record<string, unknown>;
  const { street, houseNumber, postalCode, locality, subLocality, country, addressType, houseNumberChoice } = c;
  return { street, houseNumber, postalCode, locality, subLocality, country, addressType, houseNumberChoice };
}
