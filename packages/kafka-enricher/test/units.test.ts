import { spawnSync } from 'node:child_process';
import { readFile, rm, stat } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CLI } from '@dq/test-support/kafka';
import { KafkaJSNonRetriableError, KafkaJSProtocolError } from 'kafkajs';
import type { KafkaMessage } from 'kafkajs';
import { envName, parseCli } from '../src/cli-args.js';
import { extractRecord, parseFieldMap } from '../src/field-map.js';
import { parsePointer, resolvePointer } from '../src/json-pointer.js';
import { decodeMessage, dlqMessage, enrichedMessage, tombstoneMessage } from '../src/message-codec.js';
import { register } from 'prom-client';
import { Metrics, METRIC } from '../src/metrics.js';
import { KafkaEnricherError } from '../src/errors.js';
import { consumerRestartDelayMs, fatalOutcome } from '../src/enricher.js';
import { PartitionPipeline, sendFailure } from '../src/partition-pipeline.js';
import { tooLarge } from '../src/message-size.js';
import type { PipelineContext } from '../src/partition-pipeline.js';
import { CallWindow, FlowControl } from '../src/flow-control.js';
import { MapCheck } from '../src/map-check.js';
import { createSilentLogger } from '@dq/core';
import type { Consumer } from 'kafkajs';

const msg = (value: string | null, offset = '7'): KafkaMessage =>
  ({
    key: Buffer.from('k1'),
    value: value === null ? null : Buffer.from(value),
    headers: { trace: Buffer.from('t-1') },
    offset,
    timestamp: '0',
    attributes: 0,
  }) as KafkaMessage;

describe('JSON pointers (RFC 6901)', () => {
  const doc = { foo: ['bar', 'baz'], '': 0, 'a/b': 1, 'm~n': 8, ' ': 7, nested: { x: { y: 'deep' } } };
  it.each([
    ['', doc],
    ['/foo', ['bar', 'baz']],
    ['/foo/0', 'bar'],
    ['/', 0],
    ['/a~1b', 1],
    ['/m~0n', 8],
    ['/ ', 7],
    ['/nested/x/y', 'deep'],
  ])('resolves %j as the RFC examples say', (text, expected) => {
    expect(resolvePointer(doc, parsePointer(text))).toEqual(expected);
  });
  it('refers to nothing for missing members, bad array indexes and steps into scalars', () => {
    for (const text of ['/missing', '/foo/2', '/foo/01', '/foo/-', '/nested/x/y/z']) expect(resolvePointer(doc, parsePointer(text))).toBeUndefined();
  });
  it('rejects text that is not a pointer', () => {
    expect(() => parsePointer('foo')).toThrow(RangeError);
    expect(() => parsePointer('/a~2')).toThrow(/~/);
  });
});

describe('field mapping', () => {
  const map = parseFieldMap('street=/address/street, postalCode=/address/zip,locality=/city', 'address');
  it('reads mapped fields, taking numbers as they are', () => {
    expect(extractRecord({ address: { street: 'Hauptstr. 1', zip: 10117 }, city: 'Berlin' }, map)).toEqual({
      ok: true,
      record: { street: 'Hauptstr. 1', postalCode: 10117, locality: 'Berlin' },
    });
  });
  it('names the missing or mistyped field', () => {
    expect(extractRecord({ address: { street: 'x', zip: '' }, city: 'B' }, map)).toMatchObject({
      ok: false,
      code: 'missing-field',
      message: expect.stringContaining('postalCode (/address/zip)'),
    });
    expect(extractRecord({ address: { street: ['x'], zip: '1' }, city: 'B' }, map)).toMatchObject({ ok: false, code: 'bad-field-type' });
    // The dead letter's dq-error-message reads as a sentence for each JSON type.
    const why = (street: unknown): string => (extractRecord({ address: { street, zip: '1' }, city: 'B' }, map) as { message: string }).message;
    expect(why({ name: 'x' })).toBe('mapped field street (/address/street) is an object, not a string or number');
    expect(why(['x'])).toBe('mapped field street (/address/street) is an array, not a string or number');
    expect(why(true)).toBe('mapped field street (/address/street) is a boolean, not a string or number');
  });
  it('refuses fields the mode does not know, duplicates and bad pointers as usage errors', () => {
    for (const text of ['vatId=/v', 'street=/a,street=/b', 'street=a', 'street', '']) {
      expect(() => parseFieldMap(text, 'address')).toThrow(KafkaEnricherError);
    }
  });
});

describe('message codec', () => {
  const map = parseFieldMap('street=/s', 'address');
  it('dead-letter reasons: no value and no key, an empty value, not JSON, not an object, missing field; a keyed tombstone is passed on', () => {
    expect(decodeMessage(msg(null), map)).toMatchObject({ kind: 'tombstone' });
    expect(tombstoneMessage(msg(null))).toEqual({ key: Buffer.from('k1'), value: null, headers: { trace: Buffer.from('t-1') }, timestamp: '0' });
    // A zero-length key is a key: compaction deletes the record stored under it.
    expect(decodeMessage({ ...msg(null), key: Buffer.alloc(0) }, map)).toMatchObject({ kind: 'tombstone' });
    expect(tombstoneMessage({ ...msg(null), key: Buffer.alloc(0) }).key).toEqual(Buffer.alloc(0));
    expect(decodeMessage({ ...msg(null), key: null }, map)).toMatchObject({
      kind: 'reject',
      code: 'empty-value',
      reason: expect.stringContaining('no value and no key'),
    });
    expect(decodeMessage(msg(''), map)).toMatchObject({ kind: 'reject', code: 'empty-value', reason: 'the message has an empty value' });
    expect(decodeMessage(msg('{nope'), map)).toMatchObject({ kind: 'reject', code: 'not-json' });
    expect(decodeMessage(msg('[1]'), map)).toMatchObject({ kind: 'reject', code: 'not-object' });
    expect(decodeMessage(msg('{"t":1}'), map)).toMatchObject({ kind: 'reject', code: 'missing-field' });
  });
  it('a not-json reason names the byte of the value where the JSON breaks, also after a byte order mark and letters beyond ASCII', () => {
    for (const text of ['{"s":"Straße" "x":1}', '\uFEFF{"s":"Straße" "x":1}', '\uFEFF\n{"s":"Ärger 🏠",\n "x":1,,}']) {
      const value = Buffer.from(text);
      const decoded = decodeMessage({ ...msg(null), value }, map);
      const at = /at byte (\d+)/.exec(decoded.kind === 'reject' ? decoded.reason : '');
      expect(decoded, JSON.stringify(text)).toMatchObject({
        kind: 'reject',
        code: 'not-json',
        reason: expect.stringMatching(/^the value is not JSON: .* at byte \d+$/),
      });
      // The byte named is where a reader of the value's bytes finds the fault: the unexpected `"` or `,`.
      const fault = text.includes(',,') ? value.indexOf(',,') + 1 : value.indexOf('"x"');
      expect(Number(at![1]), JSON.stringify(text)).toBe(fault);
    }
  });
  it('the enriched message keeps key, headers and value and adds dq with the source position', () => {
    const decoded = decodeMessage(msg('{"s":"Hauptstr","id":3}'), map);
    if (decoded.kind !== 'record') throw new Error('expected a record');
    const out = enrichedMessage(
      decoded,
      { status: 'accepted', resultClass: 'B', requestId: 'r-1', source: 'api' },
      { topic: 'in', partition: 2, offset: '7' },
      'dq',
    );
    expect(out.key).toEqual(Buffer.from('k1'));
    expect(out.headers).toEqual({ trace: Buffer.from('t-1') });
    expect(JSON.parse(String(out.value))).toEqual({
      s: 'Hauptstr',
      id: 3,
      dq: { status: 'accepted', class: 'B', requestId: 'r-1', source: { topic: 'in', partition: 2, offset: '7' } },
    });
  });
  it('the enriched value keeps the original members as written, big integers and spacing included', () => {
    const decoded = decodeMessage(msg('{ "id": 12345678901234567890, "s": "Hauptstr", "price": 1.50 }\n'), map);
    if (decoded.kind !== 'record') throw new Error('expected a record');
    const out = String(enrichedMessage(decoded, { status: 'review', resultClass: 'D', source: 'api' }, { topic: 'in', partition: 0, offset: '7' }, 'dq').value);
    expect(out.startsWith('{ "id": 12345678901234567890, "s": "Hauptstr", "price": 1.50 ,"dq":')).toBe(true);
    expect(JSON.parse(out)).toMatchObject({ s: 'Hauptstr', dq: { status: 'review', class: 'D', source: { topic: 'in', partition: 0, offset: '7' } } });
  });
  it('the enriched value replaces a member already named like the dq field, and works for an object with only the mapped field', () => {
    const replaced = decodeMessage(msg('{"s":"Hauptstr","dq":{"stale":true},"n":1}'), map);
    if (replaced.kind !== 'record') throw new Error('expected a record');
    const source = { topic: 'in', partition: 0, offset: '7' };
    expect(JSON.parse(String(enrichedMessage(replaced, { status: 'accepted', resultClass: 'A', source: 'api' }, source, 'dq').value))).toEqual({
      s: 'Hauptstr',
      dq: { status: 'accepted', class: 'A', source },
      n: 1,
    });
    const other = decodeMessage(msg('{"s":"Hauptstr"}'), map);
    if (other.kind !== 'record') throw new Error('expected a record');
    expect(JSON.parse(String(enrichedMessage(other, { status: 'accepted', source: 'api' }, source, 'quality').value))).toEqual({
      s: 'Hauptstr',
      quality: { status: 'accepted', source },
    });
  });
  it('a member already named like the dq field has only its value replaced: every other byte of the input stays, big and precise numbers included', () => {
    const source = { topic: 'in', partition: 0, offset: '7' };
    const result = { status: 'accepted', resultClass: 'A', source: 'api' } as const;
    const dq = JSON.stringify({ status: 'accepted', class: 'A', source });
    const old = '{"status": "review", "note": "a \\"}\\" in a string", "list": [1, {"dq": 2}], "n": 1.0}';
    const head = '{ "id" : 12345678901234567890,\n\t"amount": 1.10, "e": 1e400, "s": "Hauptstr", "k\\"ey": "x\\\\", "dq" :  ';
    const tail = ' ,"nested": {"dq": {"keep": 1e400}}, "z": -0.0 }\r\n';
    const decoded = decodeMessage(msg(head + old + tail), map);
    if (decoded.kind !== 'record') throw new Error('expected a record');
    expect(String(enrichedMessage(decoded, result, source, 'dq').value)).toBe(head + dq + tail);
    // Duplicate members: each is replaced, whichever one a reader takes (JSON.parse: the last).
    const twice = decodeMessage(msg('{"dq":1,"s":"Hauptstr","\\u0064q":[2, 3],"big":1.10}'), map);
    if (twice.kind !== 'record') throw new Error('expected a record');
    expect(String(enrichedMessage(twice, result, source, 'dq').value)).toBe(`{"dq":${dq},"s":"Hauptstr","\\u0064q":${dq},"big":1.10}`);
  });
  it('a value starting with a byte order mark is read past it, and its output keeps it', () => {
    const decoded = decodeMessage(msg('\uFEFF{"s":"Hauptstr"}'), map);
    if (decoded.kind !== 'record') throw new Error(`expected a record, got ${JSON.stringify(decoded)}`);
    const out = enrichedMessage(decoded, { status: 'accepted', source: 'api' }, { topic: 'in', partition: 0, offset: '7' }, 'dq').value as string;
    expect(Buffer.from(out).subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    expect(out.startsWith('\uFEFF{"s":"Hauptstr","dq":{')).toBe(true);
  });
  it('the output and the dead letter keep the input timestamp', () => {
    const m = { ...msg('{"s":"Hauptstr"}'), timestamp: '1500000000123' } as KafkaMessage;
    const decoded = decodeMessage(m, map);
    if (decoded.kind !== 'record') throw new Error('expected a record');
    const source = { topic: 'in', partition: 0, offset: '7' };
    expect(enrichedMessage(decoded, { status: 'accepted', source: 'api' }, source, 'dq').timestamp).toBe('1500000000123');
    expect(dlqMessage(m, source, { code: 'x', message: 'y' }).timestamp).toBe('1500000000123');
    expect(dlqMessage(m, source, { code: 'x', message: 'y' }, 20_000).timestamp).toBe('1500000000123');
  });
  it('a dead letter never exceeds --max-message-bytes: the value, then the original headers, then the key are left out, and a header says which', () => {
    const limit = 20_000;
    const source = { topic: 'in', partition: 3, offset: '42' };
    const reason = { code: 'too-large', message: 'offset 42: the enriched message is too large' };
    const at = (key: string, value: string, headers: KafkaMessage['headers']): KafkaMessage =>
      ({ ...msg(value, '42'), key: Buffer.from(key), headers }) as KafkaMessage;
    const big = 'x'.repeat(30_000);
    const own = { 'dq-error-code': 'too-large', 'dq-original-topic': 'in', 'dq-original-partition': '3', 'dq-original-offset': '42' };
    const where = 'from in partition 3 offset 42 while the topic keeps it';

    const bigValue = dlqMessage(at('k', big, { trace: 't' }), source, reason, limit);
    expect(tooLarge(bigValue, limit)).toBe(false);
    expect(bigValue.key).toEqual(Buffer.from('k'));
    expect(bigValue.headers).toMatchObject({ trace: 't', ...own, 'dq-left-out': 'value' });
    expect(bigValue.headers!['dq-error-message']).toBe(`${reason.message}; the value (30000 bytes) is left out here: read it ${where}`);

    const bigHeader = dlqMessage(at('k', '{}', { trace: 't', big }), source, reason, limit);
    expect(tooLarge(bigHeader, limit)).toBe(false);
    expect(bigHeader.key).toEqual(Buffer.from('k'));
    expect(bigHeader.value).toEqual(Buffer.alloc(0));
    expect(Object.keys(bigHeader.headers!).sort()).toEqual([...Object.keys(own), 'dq-error-message', 'dq-left-out'].sort());
    expect(bigHeader.headers).toMatchObject({ ...own, 'dq-left-out': 'value,headers' });
    expect(bigHeader.headers!['dq-error-message']).toMatch(
      /; the value \(2 bytes\) and the headers \(300\d\d bytes\) are left out here: read them from in partition 3 offset 42/,
    );

    const bigKey = dlqMessage(at(big, '{}', { trace: 't' }), source, reason, limit);
    expect(tooLarge(bigKey, limit)).toBe(false);
    expect(bigKey.key).toBeNull();
    expect(bigKey.headers).toMatchObject({ ...own, 'dq-left-out': 'value,headers,key' });
    expect(bigKey.headers!['dq-error-message']).toMatch(
      /; the value \(2 bytes\), the headers \(\d+ bytes\) and the key \(30000 bytes\) are left out here: read them /,
    );
  });
  it('the DLQ message is the original plus dq-* headers', () => {
    const m = msg('{bad');
    const out = dlqMessage(m, { topic: 'in', partition: 1, offset: '7' }, { code: 'field-error', message: 'country: invalid', requestId: 'r-9' });
    expect(out.value).toBe(m.value);
    expect(out.headers).toMatchObject({
      trace: Buffer.from('t-1'),
      'dq-error-code': 'field-error',
      'dq-error-message': 'country: invalid',
      'dq-original-topic': 'in',
      'dq-original-partition': '1',
      'dq-original-offset': '7',
      'dq-request-id': 'r-9',
    });
  });
});

describe('command line', () => {
  const required = [
    'enrich',
    '--brokers',
    'b:9092',
    '--group',
    'g',
    '--input',
    'i',
    '--output',
    'o',
    '--dlq',
    'd',
    '--map',
    'street=/s',
    '--base-url',
    'http://127.0.0.1:1',
  ];
  it('names an argument given without its flag', () => {
    expect(() => parseCli(['enrich', 'orders', ...required.slice(1)], { DQ_API_KEY: 'k' })).toThrow(
      'unexpected "orders" after "enrich": every setting is a flag, e.g. --input <topic>',
    );
  });

  it('takes every flag from DQ_KAFKA_* when not given, flags winning', () => {
    const cmd = parseCli(['enrich', '--group', 'from-flag'], {
      DQ_KAFKA_BROKERS: 'a:1,b:2',
      DQ_KAFKA_GROUP: 'from-env',
      DQ_KAFKA_INPUT: 'i',
      DQ_KAFKA_OUTPUT: 'o',
      DQ_KAFKA_DLQ: 'd',
      DQ_KAFKA_MAP: 'street=/s',
      DQ_BASE_URL: 'http://x',
      DQ_API_KEY: 'k',
      DQ_KAFKA_MAX_IN_FLIGHT: '100',
      DQ_KAFKA_IDEMPOTENT: 'true',
      DQ_KAFKA_SASL_MECHANISM: 'scram-sha-512',
      DQ_KAFKA_SASL_USERNAME: 'u',
      DQ_KAFKA_SASL_PASSWORD: 'p',
      DQ_KAFKA_SSL: '1',
    });
    if (cmd.help) throw new Error('expected options');
    expect(cmd.options).toMatchObject({
      brokers: ['a:1', 'b:2'],
      groupId: 'from-flag',
      maxInFlight: 100,
      idempotent: true,
      sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' },
      ssl: { rejectUnauthorized: true },
    });
    expect(envName('max-in-flight')).toBe('DQ_KAFKA_MAX_IN_FLIGHT');
  });
  it('passes --threads to the engine, 0 included', () => {
    const cmd = parseCli([...required, '--threads', '0', '--concurrency', '8'], { DQ_API_KEY: 'k' });
    if (cmd.help) throw new Error('expected options');
    expect(cmd.options.engine).toMatchObject({ threads: 0, concurrency: 8 });
  });
  it('names the flag at fault with exit code 2', () => {
    const bad = [
      [...required, '--max-in-flight', '0'],
      [...required, '--threads', '-1'],
      [...required, '--mode', 'phone'],
      required.filter((a) => a !== '--dlq' && a !== 'd'),
      [...required.slice(0, 9), 'i', ...required.slice(10)],
    ];
    for (const argv of bad) {
      try {
        parseCli(argv, { DQ_API_KEY: 'k' });
        throw new Error(`accepted ${argv.join(' ')}`);
      } catch (e) {
        expect(e).toBeInstanceOf(KafkaEnricherError);
        expect((e as KafkaEnricherError).exitCode).toBe(2);
      }
    }
  });
  it('refuses a --dq-field that would replace the member --map reads from (the output would lose the input), exit 2 from the CLI', async () => {
    const argv = ['enrich', '--brokers', '127.0.0.1:1', '--group', 'g', '--input', 'i', '--output', 'o', '--dlq', 'd', '--base-url', 'http://127.0.0.1:1'];
    const child = spawnSync(process.execPath, [CLI, ...argv, '--map', 'street=/address/street,country=/cc', '--dq-field', 'address'], {
      env: { PATH: process.env['PATH'] ?? '', DQ_API_KEY: 'k' },
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(2);
    expect(child.stderr).toContain(
      'dq-kafka: usage: --dq-field: "address" is the member --map reads street from (/address/street); the output would hold the platform\'s answer instead of the input there: choose another name',
    );
    // A member no pointer starts with is fine, as is the default.
    expect(() => parseCli([...argv, '--map', 'street=/address/street', '--dq-field', 'quality'], { DQ_API_KEY: 'k' })).not.toThrow();
    expect(() => parseCli([...argv, '--map', 'street=/dq/street'], { DQ_API_KEY: 'k' })).toThrow(/--dq-field: "dq" is the member --map reads street from/);
  });

  it('uses the plain producer unless --idempotent is given, and refuses both flags at once', () => {
    const plain = parseCli(required, { DQ_API_KEY: 'k' });
    const idem = parseCli([...required, '--idempotent'], { DQ_API_KEY: 'k' });
    if (plain.help || idem.help) throw new Error('expected options');
    expect(plain.options.idempotent).toBe(false);
    expect(idem.options.idempotent).toBe(true);
    expect(() => parseCli([...required, '--idempotent', '--no-idempotent'], { DQ_API_KEY: 'k' })).toThrow(/--idempotent and --no-idempotent/);
  });
});

describe('a send the brokers refuse', () => {
  // The test broker accepts any size, so kafkajs's own error (as its producer throws it) stands in for a broker's answer.
  const refusal = (type: string, code: number): Error => {
    const protocol = new KafkaJSProtocolError({
      name: 'KafkaJSProtocolError',
      type,
      code,
      retriable: false,
      message: 'The request included a message larger than the max message size the server will accept',
    } as unknown as Error);
    // As kafkajs's retrier gives up on it: the protocol error as the cause.
    return Object.assign(new KafkaJSNonRetriableError(protocol), { cause: protocol });
  };
  const at = { topic: 'in', partition: 3, offset: '100' };

  it('as too large: exit 2, saying to lower --max-message-bytes (a restart with the same flags would be refused again)', () => {
    for (const [type, code] of [
      ['MESSAGE_TOO_LARGE', 10],
      ['RECORD_LIST_TOO_LARGE', 18],
    ] as const) {
      const e = sendFailure(refusal(type, code), 'in[3] offsets 100-599', 1_000_000, at);
      expect(e.code).toBe('message-too-large');
      expect(e.exitCode).toBe(2);
      expect(e.message).toBe(
        `the brokers refused the results of in[3] offsets 100-599 as too large (${type}): a topic's max.message.bytes is below --max-message-bytes 1000000; ` +
          'set --max-message-bytes to at most the smallest max.message.bytes of the output and DLQ topics and start again (the offsets stay uncommitted and are re-read)',
      );
    }
  });

  it('for an input timestamp a topic refuses (INVALID_TIMESTAMP): exit 2, naming the topic settings, not 75 (every restart would be refused again)', () => {
    const e = sendFailure(refusal('INVALID_TIMESTAMP', 32), 'in[3] offsets 100-599', 1_000_000, at);
    expect(e.code).toBe('message-timestamp-refused');
    expect(e.exitCode).toBe(2);
    expect(e.message).toMatch(
      /^the brokers refused the results of in\[3\] offsets 100-599 for their timestamps \(INVALID_TIMESTAMP\): .*message\.timestamp\.before\.max\.ms/,
    );
    expect(e.message).toMatch(/LogAppendTime/);
  });

  it('for another reason: exit 75, re-read on restart', () => {
    const e = sendFailure(new KafkaJSNonRetriableError('Broker not available'), 'in[3] offsets 100-599', 1_000_000, at);
    expect(e.code).toBe('kafka-failure');
    expect(e.exitCode).toBe(75);
  });
});

describe('consumer restarts', () => {
  it('wait a jittered, doubling time: instances that crashed together do not rejoin in lockstep', () => {
    // Ten instances whose consumers crashed at the same moment, each with its own random source.
    const waits = Array.from({ length: 10 }, () => consumerRestartDelayMs(1));
    expect(new Set(waits).size).toBeGreaterThan(5);
    for (const restart of [1, 2, 3, 4, 5]) {
      const ceiling = Math.min(16_000, 1000 * 2 ** (restart - 1));
      expect(consumerRestartDelayMs(restart, () => 0)).toBe(0);
      expect(consumerRestartDelayMs(restart, () => 0.999_999)).toBe(ceiling - 1);
      expect(consumerRestartDelayMs(restart, () => 0.5)).toBe(ceiling / 2);
    }
  });
});

describe('metrics', () => {
  it('renders counters with escaped labels in the Prometheus text format', async () => {
    const m = new Metrics();
    m.inc(METRIC.dlq, { reason: 'not-json' }, 2);
    m.inc(METRIC.dlq, { reason: 'a"b' });
    const text = await m.render();
    expect(text).toContain('# TYPE dq_kafka_dlq_messages_total counter');
    expect(text).toMatch(/^dq_kafka_dlq_messages_total\{reason="not-json"\} 2$/m);
    expect(text).toMatch(/^dq_kafka_dlq_messages_total\{reason="a\\"b"\} 1$/m);
  });

  it('exports the process metrics Prometheus users expect: CPU, memory, event-loop lag, GC', async () => {
    const text = await new Metrics().render();
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^process_resident_memory_bytes [1-9]\d*$/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes [1-9]\d*$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(text).toContain('# TYPE nodejs_gc_duration_seconds histogram');
  });

  it("keeps each instance on its own registry: two sets of metrics do not mix, prom-client's global one stays empty", async () => {
    const a = new Metrics();
    const b = new Metrics({ defaultMetrics: false });
    a.inc(METRIC.consumed, {}, 7);
    b.set(METRIC.lag, { topic: 'in', partition: '3' }, 12);
    b.clear(METRIC.lag);
    b.set(METRIC.lag, { topic: 'in', partition: '4' }, 2);
    const [textA, textB] = await Promise.all([a.render(), b.render()]);
    expect(textA).toMatch(/^dq_kafka_messages_consumed_total 7$/m);
    expect(textB).toMatch(/^dq_kafka_messages_consumed_total 0$/m);
    expect(textB).not.toContain('partition="3"');
    expect(textB).toMatch(/^dq_kafka_consumer_lag\{topic="in",partition="4"\} 2$/m);
    expect(textB).not.toContain('process_cpu_user_seconds_total');
    expect(await register.metrics()).not.toContain('dq_kafka_');
  });
});

describe('a partition pipeline cancelled while its calls never answer', () => {
  it('shows the lag as fetched, and settles its cancel at once though the engine ignores the abort (an HTTP client that left its calls pending)', async () => {
    const metrics = new Metrics();
    const flow = new FlowControl(() => ({}) as Consumer, metrics, 100);
    let calls = 0;
    const ctx = {
      engine: {
        process: () => {
          calls += 1;
          return new Promise(() => undefined); // never settles, abort or not
        },
      },
      producer: {},
      flow,
      calls: new CallWindow(32),
      metrics,
      logger: createSilentLogger(),
      map: parseFieldMap('street=/s', 'address'),
      outputTopic: 'out',
      dlqTopic: 'dlq',
      dqField: 'dq',
      mapCheck: new MapCheck(() => undefined),
      maxMessageBytes: 1_000_000,
      retryMaxMs: 60_000,
      retryBaseDelayMs: 100,
      commit: async () => undefined,
      onFatal: () => undefined,
    } as unknown as PipelineContext;
    const pipeline = new PartitionPipeline('in', 0, ctx);
    expect(flow.take(3)).toBe(3);
    pipeline.enqueue([msg('{"s":"Hauptstraße 1"}', '0'), msg('{"s":"Hauptstraße 2"}', '1'), msg('{"s":"Hauptstraße 3"}', '2')], '10', 100);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls).toBeGreaterThan(0);
    // The lag shows while nothing can be delivered: high watermark 10, nothing committed from offset 0.
    expect(metrics.get(METRIC.lag, { topic: 'in', partition: '0' })).toBe(10);
    const settled = await Promise.race([pipeline.cancel().then(() => 'settled'), new Promise((resolve) => setTimeout(() => resolve('pending'), 2_000))]);
    expect(settled).toBe('settled');
    expect(flow.inFlight).toBe(0);
  });
});

describe('the outcome of a run ended by an unexpected error', () => {
  it('says it is a bug and names a file of the temporary folder, readable by this user only, holding the stack (secrets removed)', async () => {
    const err = new Error('invalid authorization header: Bearer s3cret-key-7');
    const { exitCode, error } = fatalOutcome(err, (t) => t.replaceAll('s3cret-key-7', '[redacted]'), { resume: 'restart dq-kafka', kept: 'offsets' });
    expect(exitCode).toBe(1);
    expect(error.code).toBe('unexpected');
    expect(error.message).toMatch(
      /^invalid authorization header: Bearer \S+; this is a bug in dq-kafka: please report it with (\S+dq-kafka-error-\S+\.txt) \(the details\)$/,
    );
    const file = /with (\S+) \(the details\)/.exec(error.message)![1]!;
    try {
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const details = await readFile(file, 'utf8');
      expect(details).toContain('at ');
      expect(details + error.message).not.toContain('s3cret-key-7');
    } finally {
      await rm(file, { force: true });
    }
  });
});
