import { describe, expect, it } from 'vitest';
import { bareCli as cli } from './exit.js';
import { parseCli } from '../src/cli-args.js';
import { parseFieldMap } from '../src/field-map.js';
import { KafkaEnricherError } from '../src/errors.js';

// Every flag a user can get wrong, refused before dq-kafka connects to anything: the parser for
// what is pure argument handling, the built CLI as a real process where the exit code or the
// printed line is what a user sees. No broker is needed: nothing here gets that far.
const SECRET = 's3cret-pass-77';
// Port 1: nothing listens there, so a run that got past its flags would end with 75, not 2.
const REQUIRED = ['enrich', '--group', 'g', '--input', 'i', '--output', 'o', '--dlq', 'd', '--base-url', 'http://127.0.0.1:1', '--map', 'street=/s'];
const ENV = { DQ_API_KEY: 'k' };

/** The usage error parseCli throws for `argv`, as the CLI prints it. */
function refusal(argv: string[], env: Record<string, string> = ENV): string {
  try {
    parseCli(argv, env);
  } catch (e) {
    expect(e).toBeInstanceOf(KafkaEnricherError);
    expect((e as KafkaEnricherError).exitCode).toBe(2);
    return `${(e as KafkaEnricherError).code}: ${(e as Error).message}`;
  }
  throw new Error(`accepted ${argv.join(' ')}`);
}

describe('dq-kafka flags a user can get wrong', () => {
  it.each<[string, string[], string]>([
    ['a field in two --map flags', ['--brokers', 'b:9092', '--map', 'street=/other'], 'usage: --map: "street" is mapped twice'],
    ['an empty --dq-field', ['--brokers', 'b:9092', '--dq-field='], 'usage: --dq-field: the value is empty: write --dq-field <name>, or leave the flag out'],
    ['an empty --client-id', ['--brokers', 'b:9092', '--client-id', ''], 'usage: --client-id: the value is empty: write --client-id <id>'],
    ['an empty --ssl-ca', ['--brokers', 'b:9092', '--ssl-ca='], 'usage: --ssl-ca: the value is empty: write --ssl-ca <file>'],
    ['an empty --include', ['--brokers', 'b:9092', '--include='], 'usage: --include: the value is empty: write --include <list>'],
    ['--brokers of commas only', ['--brokers', ',,'], 'usage: --brokers: names no broker: give host:port,..., e.g. kafka-1:9092,kafka-2:9092'],
    ['a broker port past 65535', ['--brokers', 'a:9092,b:99999'], 'usage: --brokers: "b:99999": the port must be from 1 to 65535'],
    ['a broker port 0', ['--brokers', 'b:0'], 'usage: --brokers: "b:0": the port must be from 1 to 65535'],
    [
      'a password without a mechanism',
      ['--brokers', 'b:9092', '--sasl-password', SECRET],
      'usage: --sasl-mechanism: required when --sasl-username or --sasl-password is given; choose plain, scram-sha-256, scram-sha-512',
    ],
    [
      'an IPv6 broker',
      ['--brokers', '[::1]:9092'],
      'usage: --brokers: "[::1]:9092" is an IPv6 address, which the Kafka client dq-kafka uses cannot connect to',
    ],
    ['an IPv6 broker without brackets', ['--brokers', 'fd00::5:9092'], 'usage: --brokers: "fd00::5:9092" is an IPv6 address'],
    // What held before, kept so.
    ['a broker without a port', ['--brokers', 'kafka'], 'usage: --brokers: "kafka" is not host:port'],
    ['a missing value at the end', ['--brokers', 'b:9092', '--rate-limit'], "Option '--rate-limit <value>' argument missing"],
    ['an unknown flag', ['--brokers', 'b:9092', '--ratelimit', '5'], "unknown flag '--ratelimit'; did you mean --rate-limit?"],
    ['a positional left over', ['--brokers', 'b:9092', 'orders'], 'usage: command: unexpected "orders" after "enrich"'],
    ['--session-timeout-ms under 6000', ['--brokers', 'b:9092', '--session-timeout-ms', '5999'], 'must be an integer from 6000 to 3600000'],
    ['--max-message-bytes past 2^31', ['--brokers', 'b:9092', '--max-message-bytes', '2147483648'], 'must be an integer from 4096 to 2147483647'],
    ['--metrics-port NaN', ['--brokers', 'b:9092', '--metrics-port', 'NaN'], '"NaN" must be an integer from 0 to 65535'],
    ['--max-age in weeks', ['--brokers', 'b:9092', '--max-age', '2w'], '"2w" is not an age'],
    ['--log-level upper-case', ['--brokers', 'b:9092', '--log-level', 'DEBUG'], '"DEBUG" is not one of debug, info, warn, error'],
  ])('refuses %s', (_, args, says) => {
    expect(refusal([...REQUIRED, ...args])).toContain(says);
  });

  it('adds up the entries of --map given more than once; any other flag given twice counts as its last', () => {
    const twice = ['--brokers', 'a:9092', '--brokers', 'b:9092', '--map', 'locality=/l', '--map', 'postalCode=/zip', '--rate-limit', '5', '--rate-limit=50'];
    const cmd = parseCli([...REQUIRED, ...twice], ENV);
    if (cmd.help) throw new Error('expected options');
    expect(cmd.options.map.map((m) => [m.field, m.pointer.text])).toEqual([
      ['street', '/s'],
      ['locality', '/l'],
      ['postalCode', '/zip'],
    ]);
    expect(cmd.options.brokers).toEqual(['b:9092']);
    expect(cmd.options.engine?.rateLimits?.batch).toBe(50);
  });

  it('takes an empty variable as not set, but not an empty flag', () => {
    const cmd = parseCli([...REQUIRED, '--brokers', 'b:9092'], { ...ENV, DQ_KAFKA_CLIENT_ID: '', DQ_KAFKA_DQ_FIELD: '' });
    if (cmd.help) throw new Error('expected options');
    expect(cmd.options).toMatchObject({ clientId: undefined, dqField: undefined });
  });
});

describe('dq-kafka --map', () => {
  it.each<[string, string]>([
    ['street=a/b', '--map: street: "a/b" is not a JSON pointer: it must start with "/" (the member a/b of the value: /a/b)'],
    ['street=/a~2b', '--map: street: "/a~2b" is not a JSON pointer: "~" must be followed by 0 or 1 (write ~0 for a "~" in a name, ~1 for a "/")'],
    ['street=/a~', '"~" must be followed by 0 or 1'],
    ['street="/a,b', '--map: "street="/a,b": the quote after street= is not closed; end the pointer with " (write "" for a quote inside it)'],
    ['street="/a" b,locality=/l', '--map: "street="/a" b": text after the closing quote of street='],
    ['street=', '--map: "street" needs a non-empty JSON pointer, e.g. street=/street'],
    ['street=""', '--map: "street" needs a non-empty JSON pointer'],
    [',', '--map: at least one <field>=<json pointer> is needed'],
    ['street=/a,street=/b', '"street" is mapped twice'],
    ['zip=/zip', '"zip" is not a address request field'],
  ])('refuses %j', (map, says) => {
    expect(() => parseFieldMap(map, 'address')).toThrow(says);
  });

  it('reads members whose names hold a comma, spaces at the ends or a quote, quoted as in dq-csv', () => {
    const map = parseFieldMap('street="/address/street, line 1", postalCode = "/ zip " ,locality="/say ""hi""",country=/a"b', 'address');
    expect(map.map((m) => [m.field, m.pointer.tokens])).toEqual([
      ['street', ['address', 'street, line 1']],
      ['postalCode', [' zip ']],
      ['locality', ['say "hi"']],
      ['country', ['a"b']],
    ]);
    // Unquoted, as before: spaces around a pointer are dropped, "/" alone is the member "".
    expect(parseFieldMap(' street = /s ,locality=/', 'address').map((m) => m.pointer.tokens)).toEqual([['s'], ['']]);
  });
});

describe('the dq-kafka process', () => {
  it.concurrent.each<[string, string[], Record<string, string>, string]>([
    [
      'a broker port past 65535 (kafkajs threw: exit 1)',
      ['--brokers', '127.0.0.1:99999'],
      ENV,
      'dq-kafka: usage: --brokers: "127.0.0.1:99999": the port must be from 1 to 65535',
    ],
    ['--brokers of commas only (kafkajs tried: exit 75)', ['--brokers', ','], ENV, 'dq-kafka: usage: --brokers: names no broker'],
    [
      'DQ_REALTIME_URL with a password',
      ['--brokers', '127.0.0.1:1'],
      { ...ENV, DQ_REALTIME_URL: `ftp://etl:${SECRET}@rt.example.com/x` },
      'dq-kafka: usage: DQ_REALTIME_URL: "ftp://etl:[redacted]@rt.example.com/x" is not an http(s) URL',
    ],
    [
      'a --sasl-password without a mechanism',
      ['--brokers', '127.0.0.1:1', `--sasl-password=${SECRET}`],
      ENV,
      'dq-kafka: usage: --sasl-mechanism: required when',
    ],
    ['an empty --dq-field', ['--brokers', '127.0.0.1:1', '--dq-field='], ENV, 'dq-kafka: usage: --dq-field: the value is empty'],
  ])('refuses %s with exit 2 at once, in one line, repeating no secret', async (_, args, env, says) => {
    const run = await cli([...REQUIRED, ...args], env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.startsWith(says), run.stderr).toBe(true);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/unexpected|this is a bug|^\{/m);
    expect(run.stderr + run.stdout).not.toContain(SECRET);
  });

  it('names a refused --base-url with its password left out', async () => {
    const run = await cli(
      [
        ...REQUIRED.filter((a, i, all) => a !== '--base-url' && all[i - 1] !== '--base-url'),
        '--brokers',
        '127.0.0.1:1',
        '--base-url',
        `ftp://etl:${SECRET}@api.example.com`,
      ],
      ENV,
    );
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe('dq-kafka: usage: --base-url: "ftp://etl:[redacted]@api.example.com" is not an http(s) URL (see dq-kafka --help)');
  });
});
