import { readFileSync } from 'node:fs';
import { checkEmptyFlags, commandLineRedactor as redactorOf, createFlagParsers, parseFlags, ENGINE_FLAGS_USAGE } from '@dq/core/cli';
import { ADDRESS_INCLUDE_VALUES, isCountryCode, MODES } from '@dq/core/schemas';
import type { LogLevel } from '@dq/core';
import { usageError } from './errors.js';
import { parseFieldMap } from './field-map.js';
import { checkDqField } from './options.js';
import type { EnricherOptions, SaslOptions } from './options.js';

const flags = createFlagParsers(usageError);
const { oneOf, number, url } = flags;

/** The `--help` text. */
export const USAGE = `Usage: dq-kafka enrich --brokers <host:port,...> --group <id> --input <topic> --output <topic>
                      --dlq <topic> --map <field>=<json pointer>,... [options]

Reads JSON messages from the input topic, checks the mapped fields with the data-quality platform
and writes each message, with a "dq" member added, to the output topic - or, when it cannot be
checked (not JSON, not an object, a mapped field missing, a 400 field error), unchanged to the DLQ
topic with dq-* headers. An input offset is committed only after its output or DLQ message is
acknowledged (at least once). Several instances with one --group share the partitions.

Options (each also as an environment variable DQ_KAFKA_<NAME>, e.g. DQ_KAFKA_BROKERS; flags win):
  --brokers <list>          bootstrap servers, host:port,... (required)
  --group <id>              consumer group id (required)
  --input <topic>           topic to read (required)
  --output <topic>          topic for enriched messages (required)
  --dlq <topic>             dead-letter topic (required)
  --map <field>=<ptr>,...   request fields from RFC 6901 JSON pointers (required), e.g.
                            street=/address/street,houseNumber=/address/no,postalCode=/address/zip
                            (quote a pointer holding a comma or edge spaces: street="/a, b";
                            a repeated --map adds its fields)
                            address: street, houseNumber, addressLine, postalCode, locality,
                                     localityLine, country
                            company: company, zip, city, street   tr: trCourt, trType, trNo
                            vat: vatId
  --mode <mode>             address (default) | company | tr | vat
  --country <CC>            country for messages without one, e.g. DE
  --include <list>          ${ADDRESS_INCLUDE_VALUES.join(', ')}
  --metrics-port <port>     serve /metrics and /healthz on this port (0 = any free one)
  --max-in-flight <n>       messages taken but not yet committed, default 5000; past it
                            partitions pause
  --batch-size <n>          at most this many messages per platform batch and per commit
                            (a smaller fetch makes a smaller one), default 500
  --max-message-bytes <n>   the largest batch the brokers accept per partition (their
                            message.max.bytes), default 1000000; sends are split to stay within
                            it, and a message larger alone goes to the DLQ as too-large
${ENGINE_FLAGS_USAGE}
  --retry-max-ms <ms>       how long one batch may stay unavailable (5xx, timeouts, 429) before
                            the run ends with exit 75, default 600000; it is never dead-lettered
  --drain-timeout-ms <ms>   on SIGTERM, time to finish the calls under way, default 20000
  --session-timeout-ms <ms> consumer group session timeout, default 30000
  --create-topics           let the brokers create a missing output or DLQ topic at start
                            (their auto-creation, default partitions); without it a missing
                            one stops the run with exit 2, as a missing input topic always does
  --from-latest             a group without committed offsets starts at the end (default: start)
  --idempotent              kafkajs's idempotent producer (experimental there): no duplicate
                            from a repeated send; needs a broker that reports a controller; not
                            covered by the tests here. Default: plain producer, acks from all
                            in-sync replicas, one send per partition in flight (order kept; a
                            repeated send may duplicate, which at least once allows)
  --no-idempotent           the plain producer (the default; accepted for older scripts)
  --client-id <id>          Kafka client id, default dq-kafka
  --dq-field <name>         member added to the output value, default dq; not a member
                            --map reads from
  --ssl                     connect with TLS (system CAs)
  --ssl-ca <file>           PEM file of the CA(s) to trust (implies --ssl)
  --ssl-cert <file>         PEM client certificate (implies --ssl), with --ssl-key <file>
  --ssl-insecure            do not verify the broker certificate (testing only)
  --sasl-mechanism <m>      plain | scram-sha-256 | scram-sha-512
  --sasl-username <user>    SASL user
  --sasl-password <pw>      SASL password (prefer DQ_KAFKA_SASL_PASSWORD: flags show in ps)
  --base-url <url>          address API host (required; or env DQ_BASE_URL)
  --realtime-url <url>      company service host (env DQ_REALTIME_URL), default the base URL
  --api-key <key>           API key (required; or env DQ_API_KEY, better: flags show in ps)
  --log-level <level>       debug | info (default) | warn | error
  --help                    this text

Exit codes: 0 stopped by SIGTERM/SIGINT after draining, 1 unexpected error, 2 bad usage or
settings (also --input, --output or --dlq naming a topic that does not exist, TLS or SASL
settings the brokers refused, and a --group whose members read other topics: the line names the
setting to fix),
3 key/account/quota stopped the run (nothing unprocessed is committed; fix it, then restart),
5 the spending cap --max-calls was reached (what was delivered is committed; restart to go on),
75 Kafka or the platform stayed unavailable, or the drain after SIGTERM/SIGINT did not finish
within --drain-timeout-ms or was cut short by a second SIGINT (restart later; uncommitted
messages are re-read).
`;

/** What the CLI runs: help, or an enricher with these options and extras. */
export type CliCommand = { help: true } | { help: false; options: EnricherOptions; metricsPort: number | undefined; logLevel: LogLevel };

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];
const SASL: readonly SaslOptions['mechanism'][] = ['plain', 'scram-sha-256', 'scram-sha-512'];

const STRING_FLAGS = [
  'brokers',
  'group',
  'input',
  'output',
  'dlq',
  'map',
  'mode',
  'country',
  'include',
  'metrics-port',
  'max-in-flight',
  'batch-size',
  'max-message-bytes',
  'concurrency',
  'threads',
  'rate-limit',
  'retry-max-ms',
  'drain-timeout-ms',
  'session-timeout-ms',
  'client-id',
  'dq-field',
  'ssl-ca',
  'ssl-cert',
  'ssl-key',
  'sasl-mechanism',
  'sasl-username',
  'sasl-password',
  'base-url',
  'realtime-url',
  'api-key',
  'log-level',
  'store',
  'max-age',
  'account-db',
  'budget',
  'account',
  'max-calls',
] as const;
const BOOLEAN_FLAGS = ['create-topics', 'from-latest', 'idempotent', 'no-idempotent', 'ssl', 'ssl-insecure', 'help'] as const;
/** Flags read from DQ_* rather than DQ_KAFKA_*: they are shared by every dq connector. */
const SHARED_ENV: Partial<Record<string, string>> = { 'base-url': 'DQ_BASE_URL', 'realtime-url': 'DQ_REALTIME_URL', 'api-key': 'DQ_API_KEY' };

/** The environment variable of a flag: DQ_KAFKA_MAX_IN_FLIGHT for --max-in-flight. */
export function envName(flag: string): string {
  return SHARED_ENV[flag] ?? `DQ_KAFKA_${flag.replace(/-/g, '_').toUpperCase()}`;
}

/** Flags whose value is a secret, and the variables that stand for them. */
const SECRET_FLAGS = ['api-key', 'sasl-password'];
const SECRET_VARIABLES = ['DQ_API_KEY', envName('sasl-password')];

/** `text` without the secrets of the command line `argv` (flags' and variables' values, URL passwords), for the message of a failure. */
export function commandLineRedactor(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): (text: string) => string {
  return redactorOf(argv, env, SECRET_FLAGS, SECRET_VARIABLES);
}

const OPTIONS = {
  ...Object.fromEntries(STRING_FLAGS.map((f) => [f, { type: 'string' as const }])),
  map: { type: 'string' as const, multiple: true },
  ...Object.fromEntries(BOOLEAN_FLAGS.map((f) => [f, { type: 'boolean' as const }])),
};

/**
 * Parses `argv` (without node and script) and `env`. Throws a KafkaEnricherError `usage` naming
 * the flag at fault.
 */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): CliCommand {
  const parsed = parseFlags(argv, OPTIONS, usageError);
  const { map: mapFlags, ...values } = parsed.values as Record<string, string | boolean | undefined> & { map?: string[] };
  const positionals = parsed.positionals;
  if (values['help'] || positionals[0] === 'help') return { help: true };
  checkEmptyFlags({ ...values, map: mapFlags }, USAGE, usageError);
  if (positionals[0] === 'enrich' && positionals.length > 1) {
    throw usageError('command', `unexpected "${positionals.slice(1).join(' ')}" after "enrich": every setting is a flag, e.g. --input <topic>`);
  }
  if (positionals[0] !== 'enrich') {
    throw usageError('command', `expected "enrich", got ${positionals.length === 0 ? 'nothing' : `"${positionals.join(' ')}"`}`);
  }
  const str = (flag: (typeof STRING_FLAGS)[number]): string | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return v;
    const e = env[envName(flag)];
    return e === undefined || e === '' ? undefined : e;
  };
  const bool = (flag: (typeof BOOLEAN_FLAGS)[number]): boolean => {
    if (values[flag] === true) return true;
    const e = env[envName(flag)]?.trim().toLowerCase();
    if (e === undefined || e === '') return false;
    if (['1', 'true', 'yes'].includes(e)) return true;
    if (['0', 'false', 'no'].includes(e)) return false;
    throw usageError(envName(flag), `"${e}" must be true or false`);
  };
  const required = (flag: (typeof STRING_FLAGS)[number], what: string): string => {
    const v = str(flag)?.trim();
    if (!v) throw usageError(`--${flag}`, `required (or ${envName(flag)}): ${what}`);
    return v;
  };

  const mode = oneOf('--mode', str('mode') ?? 'address', MODES);
  const country = str('country')?.trim().toUpperCase();
  if (country !== undefined && !isCountryCode(country)) throw usageError('--country', `"${country}" is not a two-letter country code`);
  const include = str('include')
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const value of include ?? []) oneOf('--include', value, ADDRESS_INCLUDE_VALUES);
  const brokers = required('brokers', 'bootstrap servers host:port,...')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  if (brokers.length === 0) throw usageError('--brokers', 'names no broker: give host:port,..., e.g. kafka-1:9092,kafka-2:9092');
  for (const b of brokers) {
    // The Kafka client (kafkajs) splits a broker at its first colon: an IPv6 address cannot be given.
    if (/^\[|^[^\s\]]*:[^\s\]]*:/.test(b))
      throw usageError(
        '--brokers',
        `"${b}" is an IPv6 address, which the Kafka client dq-kafka uses cannot connect to: give the broker's host name (host:port) or an IPv4 address`,
      );
    const port = /^[^\s:]+:(\d{1,5})$/.exec(b)?.[1];
    if (port === undefined) throw usageError('--brokers', `"${b}" is not host:port, e.g. kafka-1:9092`);
    if (Number(port) < 1 || Number(port) > 65_535) throw usageError('--brokers', `"${b}": the port must be from 1 to 65535`);
  }
  const topics = {
    input: required('input', 'the topic to read'),
    output: required('output', 'the topic for enriched messages'),
    dlq: required('dlq', 'the dead-letter topic'),
  };
  if (new Set(Object.values(topics)).size < 3) throw usageError('--output', 'input, output and dlq topics must be three different topics');
  const baseUrl = url('--base-url', str('base-url'));
  if (!baseUrl) throw usageError('--base-url', 'required (or DQ_BASE_URL): the platform host, e.g. a sandbox started with dq-sandbox');
  const apiKey = str('api-key');
  if (!apiKey) throw usageError('--api-key', 'an API key is needed: set DQ_API_KEY (or pass --api-key)');
  const engine: NonNullable<EnricherOptions['engine']> = flags.engine({
    concurrency: str('concurrency'),
    threads: str('threads'),
    'rate-limit': str('rate-limit'),
    store: str('store'),
    'max-age': str('max-age'),
    'account-db': str('account-db'),
    budget: str('budget'),
    account: str('account'),
    'max-calls': str('max-calls'),
  });

  const options: EnricherOptions = {
    brokers,
    groupId: required('group', 'the consumer group id'),
    inputTopic: topics.input,
    outputTopic: topics.output,
    dlqTopic: topics.dlq,
    map: parseFieldMap(mapFlags ?? [required('map', '<field>=<json pointer>,...')], mode),
    mode,
    country,
    include,
    baseUrl,
    realtimeUrl: url('--realtime-url', str('realtime-url')),
    apiKey,
    clientId: str('client-id'),
    maxInFlight: opt(str('max-in-flight'), (t) => number('--max-in-flight', t, 1, 1_000_000, true)),
    batchSize: opt(str('batch-size'), (t) => number('--batch-size', t, 1, 100_000, true)),
    maxMessageBytes: opt(str('max-message-bytes'), (t) => number('--max-message-bytes', t, 4096, 2_147_483_647, true)),
    retryMaxMs: opt(str('retry-max-ms'), (t) => number('--retry-max-ms', t, 0, 86_400_000, true)),
    drainTimeoutMs: opt(str('drain-timeout-ms'), (t) => number('--drain-timeout-ms', t, 0, 3_600_000, true)),
    sessionTimeoutMs: opt(str('session-timeout-ms'), (t) => number('--session-timeout-ms', t, 6000, 3_600_000, true)),
    dqField: str('dq-field'),
    fromBeginning: !bool('from-latest'),
    createTopics: bool('create-topics'),
    idempotent: idempotent(bool('idempotent'), bool('no-idempotent')),
    ssl: tlsOptions(str('ssl-ca'), str('ssl-cert'), str('ssl-key'), bool('ssl'), bool('ssl-insecure')),
    sasl: saslOptions(str('sasl-mechanism'), str('sasl-username'), str('sasl-password')),
    engine,
  };
  checkDqField(options.map, options.dqField ?? 'dq');
  const metricsPort = opt(str('metrics-port'), (t) => number('--metrics-port', t, 0, 65_535, true));
  return { help: false, options, metricsPort, logLevel: oneOf('--log-level', str('log-level') ?? 'info', LEVELS) };
}

function tlsOptions(ca: string | undefined, cert: string | undefined, key: string | undefined, ssl: boolean, insecure: boolean): EnricherOptions['ssl'] {
  if ((cert === undefined) !== (key === undefined)) throw usageError(cert ? '--ssl-key' : '--ssl-cert', '--ssl-cert and --ssl-key go together');
  if (!ssl && !ca && !cert && !insecure) return undefined;
  const read = (flag: string, path: string | undefined): string | undefined => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw usageError(flag, `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const tls: Record<string, unknown> = { rejectUnauthorized: !insecure };
  const caText = read('--ssl-ca', ca);
  if (caText) tls['ca'] = [caText];
  const certText = read('--ssl-cert', cert);
  if (certText) tls['cert'] = certText;
  const keyText = read('--ssl-key', key);
  if (keyText) tls['key'] = keyText;
  return tls;
}

function saslOptions(mechanism: string | undefined, username: string | undefined, password: string | undefined): SaslOptions | undefined {
  if (mechanism === undefined && username === undefined && password === undefined) return undefined;
  if (mechanism === undefined) throw usageError('--sasl-mechanism', `required when --sasl-username or --sasl-password is given; choose ${SASL.join(', ')}`);
  const m = oneOf('--sasl-mechanism', mechanism, SASL);
  if (!username) throw usageError('--sasl-username', `required with --sasl-mechanism (or ${envName('sasl-username')})`);
  if (!password) throw usageError('--sasl-password', `required with --sasl-mechanism: set ${envName('sasl-password')}`);
  return { mechanism: m, username, password };
}

function idempotent(on: boolean, off: boolean): boolean {
  if (on && off) throw usageError('--idempotent', '--idempotent and --no-idempotent contradict each other; give one');
  return on;
}

function opt<T>(text: string | undefined, parse: (t: string) => T): T | undefined {
  return text === undefined ? undefined : parse(text);
}
