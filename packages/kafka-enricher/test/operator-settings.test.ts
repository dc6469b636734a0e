import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { bareCli as cli } from './exit.js';
import { parseCli } from '../src/cli-args.js';
import { KafkaEnricherError } from '../src/errors.js';

// Settings an operator gets wrong: topics named twice, DQ_KAFKA_* variables with bad values or
// names, broker lists written as elsewhere. Each is refused before dq-kafka connects to anything,
// in one line naming the setting where the operator has to correct it. No broker is needed.
const REQUIRED = ['enrich', '--brokers', 'b:9092', '--group', 'g', '--base-url', 'http://127.0.0.1:1', '--map', 'street=/s'];
const TOPICS = ['--input', 'customers', '--output', 'customers.enriched', '--dlq', 'customers.dlq'];
const ENV = { DQ_API_KEY: 'k' };

/** The usage error parseCli throws, as the CLI prints it after `dq-kafka: `. */
function refusal(argv: string[], env: Record<string, string> = {}): string {
  try {
    parseCli(argv, { ...ENV, ...env });
  } catch (e) {
    expect(e).toBeInstanceOf(KafkaEnricherError);
    expect((e as KafkaEnricherError).exitCode).toBe(2);
    return `${(e as KafkaEnricherError).code}: ${(e as Error).message}`;
  }
  throw new Error(`accepted ${argv.join(' ')}`);
}

describe('--input, --output and --dlq naming one topic twice', () => {
  it.each<[string, string[], Record<string, string>, string]>([
    [
      '--output equal to --input (a loop: its own output read, enriched and paid for again)',
      ['--input', 'customers', '--output', 'customers', '--dlq', 'customers.dlq'],
      {},
      'usage: --output: "customers" is also the --input topic: dq-kafka would read its own output, enrich it again and write it again, without end (the topic growing, the platform asked again); give the enriched messages a topic of their own, e.g. customers.enriched (see dq-kafka --help)',
    ],
    [
      '--dlq equal to --input (was named --output)',
      ['--input', 'customers', '--output', 'customers.enriched', '--dlq', 'customers'],
      {},
      'usage: --dlq: "customers" is also the --input topic: dq-kafka would read its dead letters again and dead-letter them again, without end; give the dead letters a topic of their own, e.g. customers.dlq (see dq-kafka --help)',
    ],
    [
      '--dlq equal to --output (unchecked messages mixed into checked ones)',
      ['--input', 'customers', '--output', 'customers.enriched', '--dlq', 'customers.enriched'],
      {},
      'usage: --dlq: "customers.enriched" is also the --output topic: the dead letters (the unchecked input, without an answer or with an old one) would be mixed into the enriched messages, where a reader of the output would take them for checked; give the dead letters a topic of their own, e.g. customers.dlq (see dq-kafka --help)',
    ],
    [
      'an --output with spaces around the input topic',
      ['--input', 'customers', '--output', ' customers ', '--dlq', 'customers.dlq'],
      {},
      'usage: --output: "customers" is also the --input topic',
    ],
    [
      'DQ_KAFKA_OUTPUT equal to --input: the variable is named',
      ['--input', 'customers', '--dlq', 'customers.dlq'],
      { DQ_KAFKA_OUTPUT: 'customers' },
      'usage: DQ_KAFKA_OUTPUT: "customers" is also the --input topic',
    ],
  ])('refuses %s', (_, topics, env, says) => {
    expect(refusal([...REQUIRED, ...topics], env)).toContain(says);
  });

  it('takes topics that differ only in case: Kafka topic names are case-sensitive, so they are three topics', () => {
    const cmd = parseCli([...REQUIRED, '--input', 'customers', '--output', 'Customers', '--dlq', 'CUSTOMERS'], ENV);
    if (cmd.help) throw new Error('expected options');
    expect([cmd.options.inputTopic, cmd.options.outputTopic, cmd.options.dlqTopic]).toEqual(['customers', 'Customers', 'CUSTOMERS']);
  });

  it.each<[string, string[], string]>([
    [
      'an --output with a space (reported as a missing topic that could not be created)',
      ['--input', 'customers', '--output', 'customers enriched', '--dlq', 'customers.dlq'],
      'usage: --output: "customers enriched" is not a Kafka topic name: one holds only ASCII letters, digits, ".", "_" and "-" (see dq-kafka --help)',
    ],
    [
      'an --input list of topics',
      ['--input', 'customers,orders', '--output', 'customers.enriched', '--dlq', 'customers.dlq'],
      'usage: --input: "customers,orders" is not a Kafka topic name: one holds only ASCII letters, digits, ".", "_" and "-"; dq-kafka reads one input topic: run one dq-kafka per topic, each with a --group of its own',
    ],
    [
      'a --dlq of 250 characters',
      ['--input', 'customers', '--output', 'customers.enriched', '--dlq', 'd'.repeat(250)],
      'is 250 characters long: a Kafka topic name has at most 249',
    ],
    ['a --dlq of "."', ['--input', 'customers', '--output', 'customers.enriched', '--dlq', '.'], 'usage: --dlq: "." is not a Kafka topic name'],
  ])('refuses %s', (_, topics, says) => {
    expect(refusal([...REQUIRED, ...topics])).toContain(says);
  });

  it('takes a topic name of 249 characters and every character Kafka allows', () => {
    const cmd = parseCli([...REQUIRED, '--input', 'a'.repeat(249), '--output', 'Out_1.x-y', '--dlq', '..dlq'], ENV);
    expect(cmd.help).toBe(false);
  });
});

describe('DQ_KAFKA_* variables', () => {
  it.each<[string, Record<string, string>, string]>([
    [
      'DQ_KAFKA_MAX_IN_FLIGHT=10k',
      { DQ_KAFKA_MAX_IN_FLIGHT: '10k' },
      'usage: DQ_KAFKA_MAX_IN_FLIGHT: "10k" must be an integer from 1 to 1000000 (see dq-kafka --help)',
    ],
    ['DQ_KAFKA_MAX_IN_FLIGHT=0', { DQ_KAFKA_MAX_IN_FLIGHT: '0' }, 'usage: DQ_KAFKA_MAX_IN_FLIGHT: "0" must be an integer from 1 to 1000000'],
    ['DQ_KAFKA_MAX_IN_FLIGHT=-5', { DQ_KAFKA_MAX_IN_FLIGHT: '-5' }, 'usage: DQ_KAFKA_MAX_IN_FLIGHT: "-5" must be an integer'],
    ['a huge DQ_KAFKA_MAX_IN_FLIGHT', { DQ_KAFKA_MAX_IN_FLIGHT: '99999999999999999999' }, 'usage: DQ_KAFKA_MAX_IN_FLIGHT: "99999999999999999999" must be'],
    ['DQ_KAFKA_METRICS_PORT=70000', { DQ_KAFKA_METRICS_PORT: '70000' }, 'usage: DQ_KAFKA_METRICS_PORT: "70000" must be an integer from 0 to 65535'],
    ['DQ_KAFKA_METRICS_PORT=-1', { DQ_KAFKA_METRICS_PORT: '-1' }, 'usage: DQ_KAFKA_METRICS_PORT: "-1" must be an integer from 0 to 65535'],
    ['DQ_KAFKA_BATCH_SIZE=1.5', { DQ_KAFKA_BATCH_SIZE: '1.5' }, 'usage: DQ_KAFKA_BATCH_SIZE: "1.5" must be an integer'],
    ['DQ_KAFKA_CONCURRENCY=lots (an engine setting)', { DQ_KAFKA_CONCURRENCY: 'lots' }, 'usage: DQ_KAFKA_CONCURRENCY: "lots" must be an integer'],
    ['DQ_KAFKA_MODE=phone', { DQ_KAFKA_MODE: 'phone' }, 'usage: DQ_KAFKA_MODE: "phone" is not one of address, company, tr, vat'],
    ['DQ_KAFKA_BROKERS with a port 0', { DQ_KAFKA_BROKERS: 'b:0' }, 'usage: DQ_KAFKA_BROKERS: "b:0": the port must be from 1 to 65535'],
    ['DQ_KAFKA_SSL_CA naming no file', { DQ_KAFKA_SSL_CA: '/nonexistent/ca.pem' }, 'usage: DQ_KAFKA_SSL_CA: cannot read /nonexistent/ca.pem: ENOENT'],
    ['DQ_REALTIME_URL not http(s)', { DQ_REALTIME_URL: 'ftp://rt.example.com' }, 'usage: DQ_REALTIME_URL: "ftp://rt.example.com" is not an http(s) URL'],
  ])('names the variable of a bad value: %s', (_, env, says) => {
    const argv = [...REQUIRED, ...TOPICS];
    // The brokers come from the variable in its own case: flags win.
    const withoutBrokers = 'DQ_KAFKA_BROKERS' in env ? argv.filter((a, i) => a !== '--brokers' && argv[i - 1] !== '--brokers') : argv;
    expect(refusal(withoutBrokers, env)).toContain(says);
  });

  it('names the flag when the flag gave the value, and lets a flag win over its bad variable', () => {
    expect(refusal([...REQUIRED, ...TOPICS, '--max-in-flight', '10k'], { DQ_KAFKA_MAX_IN_FLIGHT: '100' })).toContain('usage: --max-in-flight: "10k"');
    const cmd = parseCli([...REQUIRED, ...TOPICS, '--max-in-flight', '7'], { ...ENV, DQ_KAFKA_MAX_IN_FLIGHT: '10k' });
    if (cmd.help) throw new Error('expected options');
    expect(cmd.options.maxInFlight).toBe(7);
  });

  it('takes an empty variable as not set, 1e3 as 1000', () => {
    const cmd = parseCli([...REQUIRED, ...TOPICS, '--group', 'g2'], { ...ENV, DQ_KAFKA_GROUP: '', DQ_KAFKA_MAX_IN_FLIGHT: '1e3', DQ_KAFKA_UNKNOWN: '' });
    if (cmd.help) throw new Error('expected options');
    expect(cmd.options).toMatchObject({ groupId: 'g2', maxInFlight: 1000 });
    expect(refusal(REQUIRED.filter((a) => a !== '--group' && a !== 'g').concat(TOPICS), { DQ_KAFKA_GROUP: '' })).toContain(
      'usage: --group: required (or DQ_KAFKA_GROUP)',
    );
  });

  it.each<[string, string]>([
    [
      'DQ_KAFKA_MAXINFLIGHT',
      'DQ_KAFKA_MAXINFLIGHT is not a setting of dq-kafka (did you mean DQ_KAFKA_MAX_IN_FLIGHT?): it is ignored and its setting left at the default; correct or remove it (the variable of a flag --<name> is DQ_KAFKA_<NAME>)',
    ],
    ['DQ_KAFKA_GROUP_ID', 'DQ_KAFKA_GROUP_ID is not a setting of dq-kafka (did you mean DQ_KAFKA_GROUP?)'],
    ['DQ_KAFKA_BASE_URL', 'DQ_KAFKA_BASE_URL is not a setting of dq-kafka (did you mean DQ_BASE_URL, shared by every dq tool?)'],
    ['DQ_KAFKA_API_KEY', 'DQ_KAFKA_API_KEY is not a setting of dq-kafka (did you mean DQ_API_KEY, shared by every dq tool?)'],
    ['DQ_KAFKA_BOOTSTRAP_SERVERS', 'DQ_KAFKA_BOOTSTRAP_SERVERS is not a setting of dq-kafka: it is ignored'],
  ])('warns of the unknown variable %s (it was ignored without a word, its setting left at the default)', (name, says) => {
    const cmd = parseCli([...REQUIRED, ...TOPICS], { ...ENV, [name]: 'secret-value-1' });
    if (cmd.help) throw new Error('expected options');
    expect(cmd.warnings).toHaveLength(1);
    expect(cmd.warnings[0]).toContain(says);
    expect(cmd.warnings[0]).not.toContain('secret-value-1');
  });

  it('passes over the variables Kubernetes adds for a Service named dq-kafka', () => {
    const links = {
      DQ_KAFKA_PORT: 'tcp://10.0.0.7:9464',
      DQ_KAFKA_SERVICE_HOST: '10.0.0.7',
      DQ_KAFKA_SERVICE_PORT: '9464',
      DQ_KAFKA_SERVICE_PORT_METRICS: '9464',
      DQ_KAFKA_PORT_9464_TCP: 'tcp://10.0.0.7:9464',
      DQ_KAFKA_PORT_9464_TCP_PROTO: 'tcp',
      DQ_KAFKA_PORT_9464_TCP_PORT: '9464',
      DQ_KAFKA_PORT_9464_TCP_ADDR: '10.0.0.7',
    };
    const cmd = parseCli([...REQUIRED, ...TOPICS], { ...ENV, ...links });
    if (cmd.help) throw new Error('expected options');
    expect(cmd.warnings).toEqual([]);
    expect(cmd.metricsPort).toBeUndefined();
  });
});

describe('--brokers written as elsewhere', () => {
  it.each<[string, string, string]>([
    [
      'a semicolon list (was called an IPv6 address)',
      'k1:9092;k2:9092',
      'usage: --brokers: "k1:9092;k2:9092" holds more than one broker: separate brokers with commas, e.g. k1:9092,k2:9092',
    ],
    [
      'a list with spaces only',
      'k1:9092 k2:9092',
      'usage: --brokers: "k1:9092 k2:9092" holds more than one broker: separate brokers with commas, e.g. k1:9092,k2:9092',
    ],
    [
      'a listener URL (was called an IPv6 address)',
      'PLAINTEXT://kafka-1:9092',
      'usage: --brokers: "PLAINTEXT://kafka-1:9092" is a listener URL: give host:port without "PLAINTEXT://" (TLS is --ssl, SASL --sasl-mechanism), e.g. kafka-1:9092',
    ],
    ['an IPv6 address still', 'fd00::5:9092', 'usage: --brokers: "fd00::5:9092" is an IPv6 address'],
  ])('refuses %s', (_, brokers, says) => {
    expect(refusal([...REQUIRED, ...TOPICS, '--brokers', brokers])).toContain(says);
  });

  it('takes a trailing comma, spaces after commas and a broker named twice', () => {
    const cmd = parseCli([...REQUIRED, ...TOPICS, '--brokers', 'k1:9092, k2:9092,k1:9092,'], ENV);
    if (cmd.help) throw new Error('expected options');
    expect(cmd.options.brokers).toEqual(['k1:9092', 'k2:9092', 'k1:9092']);
  });
});

describe('the dq-kafka process', () => {
  // Port 1: nothing listens there, so a run that got past its settings would end with 75, not 2.
  const ARGS = ['enrich', '--brokers', '127.0.0.1:1', '--group', 'g', '--base-url', 'http://127.0.0.1:1', '--map', 'street=/s', '--store', 'off'];

  it.concurrent.each<[string, string[], Record<string, string>, string]>([
    [
      'DQ_KAFKA_OUTPUT equal to --input',
      ['--input', 'customers', '--dlq', 'customers.dlq'],
      { DQ_KAFKA_OUTPUT: 'customers' },
      'dq-kafka: usage: DQ_KAFKA_OUTPUT: "customers" is also the --input topic',
    ],
    ['DQ_KAFKA_MAX_IN_FLIGHT=10k', TOPICS, { DQ_KAFKA_MAX_IN_FLIGHT: '10k' }, 'dq-kafka: usage: DQ_KAFKA_MAX_IN_FLIGHT: "10k" must be an integer'],
  ])('refuses %s with exit 2 at once, in one line', async (_, args, env, says) => {
    const run = await cli([...ARGS, ...args], { ...ENV, ...env });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.startsWith(says), run.stderr).toBe(true);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('refuses a DQ_KAFKA_METRICS_PORT another process listens on with exit 2 naming the variable and the port, before it connects; a mistyped variable is warned of first', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const run = await cli([...ARGS, ...TOPICS], { ...ENV, DQ_KAFKA_METRICS_PORT: String(port), DQ_KAFKA_MAX_INFLIGHT: '100' });
      expect(run.code, run.stderr).toBe(2);
      const [warning, ...rest] = run.stderr.trim().split('\n');
      expect(JSON.parse(warning ?? '')).toMatchObject({
        level: 'warn',
        msg: expect.stringContaining('DQ_KAFKA_MAX_INFLIGHT is not a setting of dq-kafka (did you mean DQ_KAFKA_MAX_IN_FLIGHT?)'),
      });
      expect(rest.join('\n')).toBe(
        `dq-kafka: metrics-listen-failed: DQ_KAFKA_METRICS_PORT: cannot listen on port ${port} (EADDRINUSE: another process listens on that port); pick another port or 0`,
      );
      expect(run.stdout).toBe('');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
