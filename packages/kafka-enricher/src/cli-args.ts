import { readFileSync } from 'node:fs';
import { checkEmptyFlags, commandLineRedactor as redactorOf, createFlagParsers, nearestNames, parseFlags, ENGINE_FLAGS_USAGE } from '@dq/core/cli';
import { ADDRESS_INCLUDE_VALUES, isCountryCode, MODES } from '@dq/core/schemas';
import type { LogLevel } from '@dq/core';
import { KafkaEnricherError, usageError } from './errors.js';
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

Options (each also as an environment variable DQ_KAFKA_<NAME>, e.g. DQ_KAFKA_BROKERS; flags win;
an unknown DQ_KAFKA_* variable is warned about):
  --brokers <list>          bootstrap servers, host:port,... (required)
  --group <id>              consumer group id (required)
  --input <topic>           topic to read (required)
  --output <topic>          topic for enriched messages (required), not the input topic
  --dlq <topic>             dead-letter topic (required), neither the input nor the output topic
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
export type CliCommand =
  | { help: true }
  | {
      help: false;
      options: EnricherOptions;
      metricsPort: number | undefined;
      /** Where the metrics port was set, for a refusal: `--metrics-port`, or DQ_KAFKA_METRICS_PORT. */
      metricsPortSetting: string;
      logLevel: LogLevel;
      /** What the operator should know before the run starts (a DQ_KAFKA_* variable that is no setting). */
      warnings: string[];
    };

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
  const warnings = unknownVariables(env);
  // Flags whose value came from their DQ_KAFKA_* variable: a refusal names the variable, which is
  // where the operator has to correct it (a manifest, a unit file), not a flag nowhere on the command line.
  const fromEnv = new Set<string>();
  try {
    return { ...parseSettings(values, mapFlags, env, fromEnv), warnings };
  } catch (err) {
    throw namingVariable(err, fromEnv);
  }
}

/** `err`, a usage error naming a flag whose value came from its variable, naming the variable instead. */
function namingVariable(err: unknown, fromEnv: ReadonlySet<string>): unknown {
  if (!(err instanceof KafkaEnricherError) || err.code !== 'usage') return err;
  const flag = /^--([a-z-]+): /.exec(err.message)?.[1];
  if (flag === undefined || !fromEnv.has(flag)) return err;
  return usageError(envName(flag), err.message.slice(flag.length + 4).replace(/ \(see dq-kafka --help\)$/, ''));
}

/** The variables dq-kafka reads: DQ_KAFKA_<FLAG> for each flag (the shared ones are DQ_*). */
const KNOWN_VARIABLES: ReadonlySet<string> = new Set([...STRING_FLAGS, ...BOOLEAN_FLAGS].map(envName).filter((name) => name.startsWith('DQ_KAFKA_')));

/**
 * Kubernetes gives every container variables for each Service of its namespace, named after the
 * Service: one named dq-kafka (to scrape its metrics) brings DQ_KAFKA_PORT, DQ_KAFKA_SERVICE_HOST,
 * DQ_KAFKA_PORT_9464_TCP_ADDR… These are no mistake of the operator's, and are passed over.
 */
const SERVICE_LINK = /^DQ_KAFKA_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$/;

/**
 * A warning for each DQ_KAFKA_* variable that is no setting (a typo such as DQ_KAFKA_MAX_INFLIGHT,
 * or DQ_KAFKA_API_KEY for DQ_API_KEY): it is ignored and its setting left at the default, where a
 * mistyped flag is refused. A warning rather than a refusal, as Kafka's own clients do for a
 * setting they do not know: a deployment's environment carries variables of other tools too. An
 * empty one counts as not set, as for the known ones; the value is never repeated.
 */
function unknownVariables(env: Readonly<Record<string, string | undefined>>): string[] {
  const warnings: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('DQ_KAFKA_') || value === undefined || value === '' || KNOWN_VARIABLES.has(name) || SERVICE_LINK.test(name)) continue;
    const shared = SHARED_ENV[name.slice('DQ_KAFKA_'.length).toLowerCase().replace(/_/g, '-')];
    const near = shared ?? nearestVariable(name);
    warnings.push(
      `${name} is not a setting of dq-kafka${near === undefined ? '' : ` (did you mean ${near}${shared ? ', shared by every dq tool' : ''}?)`}: ` +
        'it is ignored and its setting left at the default; correct or remove it (the variable of a flag --<name> is DQ_KAFKA_<NAME>)',
    );
  }
  return warnings;
}

/** The known variable closest to `name` (at most 2 edits, or one name the start of the other; the longer of two as near), if any. */
function nearestVariable(name: string): string | undefined {
  const prefix = 'DQ_KAFKA_';
  const known = [...KNOWN_VARIABLES].sort((a, b) => b.length - a.length).map((v) => v.slice(prefix.length));
  const [near] = nearestNames(name.slice(prefix.length), known);
  return near === undefined ? undefined : prefix + near;
}

function parseSettings(
  values: Record<string, string | boolean | undefined>,
  mapFlags: string[] | undefined,
  env: Readonly<Record<string, string | undefined>>,
  fromEnv: Set<string>,
): Omit<Extract<CliCommand, { help: false }>, 'warnings'> {
  const str = (flag: (typeof STRING_FLAGS)[number]): string | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return v;
    const e = env[envName(flag)];
    if (e === undefined || e === '') return undefined;
    fromEnv.add(flag);
    return e;
  };
  /** How a refusal names the setting: the flag, or the variable its value came from. */
  const source = (flag: (typeof STRING_FLAGS)[number]): string => (fromEnv.has(flag) ? envName(flag) : `--${flag}`);
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
  for (const b of brokers) checkBroker(b);
  const topics = {
    input: required('input', 'the topic to read'),
    output: required('output', 'the topic for enriched messages'),
    dlq: required('dlq', 'the dead-letter topic'),
  };
  for (const flag of ['input', 'output', 'dlq'] as const) checkTopicName(source(flag), topics[flag], flag === 'input');
  checkDistinctTopics(topics, source);
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
  return { help: false, options, metricsPort, metricsPortSetting: source('metrics-port'), logLevel: oneOf('--log-level', str('log-level') ?? 'info', LEVELS) };
}

/**
 * Refuses a --brokers entry that is not host:port with a port from 1 to 65535, saying what it is
 * where that is clear: a listener URL (PLAINTEXT://host:port, as in the brokers' own settings),
 * brokers separated by something other than a comma, or an IPv6 address, which kafkajs (it splits
 * a broker at its first colon) cannot connect to.
 */
function checkBroker(b: string): void {
  const scheme = /^([a-z][a-z0-9_+.-]*):\/\//i.exec(b)?.[1];
  if (scheme !== undefined)
    throw usageError(
      '--brokers',
      `"${b}" is a listener URL: give host:port without "${scheme}://" (TLS is --ssl, SASL --sasl-mechanism), e.g. ${b.slice(scheme.length + 3).replace(/\/+$/, '')}`,
    );
  if (/[;\s|]/.test(b) && b.split(/[;\s|]+/).filter(Boolean).length > 1)
    throw usageError(
      '--brokers',
      `"${b}" holds more than one broker: separate brokers with commas, e.g. ${b
        .split(/[;\s|]+/)
        .filter(Boolean)
        .join(',')}`,
    );
  if (/^\[/.test(b) || (/^[0-9a-f:.]+$/i.test(b) && /:.*:/.test(b)))
    throw usageError(
      '--brokers',
      `"${b}" is an IPv6 address, which the Kafka client dq-kafka uses cannot connect to: give the broker's host name (host:port) or an IPv4 address`,
    );
  const port = /^[^\s:]+:(\d{1,5})$/.exec(b)?.[1];
  if (port === undefined) throw usageError('--brokers', `"${b}" is not host:port, e.g. kafka-1:9092`);
  if (Number(port) < 1 || Number(port) > 65_535) throw usageError('--brokers', `"${b}": the port must be from 1 to 65535`);
}

/** Kafka's rule for topic names (its `Topic.validate`): these characters, 1 to 249 of them, not "." or "..". */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/**
 * Refuses a name no Kafka cluster can have (a space, a comma, a slash, more than 249 characters):
 * it would be reported as a missing topic, whose advice (create it, or --create-topics) cannot be
 * followed. `input`: a comma there is most likely a list of topics, which dq-kafka does not read.
 */
function checkTopicName(setting: string, name: string, input: boolean): void {
  if (TOPIC_NAME.test(name) && name !== '.' && name !== '..') return;
  const why =
    name.length > 249
      ? `is ${name.length} characters long: a Kafka topic name has at most 249`
      : `is not a Kafka topic name: one holds only ASCII letters, digits, ".", "_" and "-"${name === '.' || name === '..' ? ' and is not "." or ".."' : ''}`;
  const list = input && name.includes(',') ? '; dq-kafka reads one input topic: run one dq-kafka per topic, each with a --group of its own' : '';
  throw usageError(setting, `"${name.length > 80 ? `${name.slice(0, 80)}…` : name}" ${why}${list}`);
}

/**
 * Refuses --input, --output and --dlq naming one topic twice. An output that is the input would be
 * read again, enriched again (the platform asked again, where the result store does not answer) and
 * written again, without end; a DLQ that is the input would dead-letter its own dead letters without
 * end; an output that is the DLQ would mix unchecked messages into the checked ones (README "Topics").
 */
function checkDistinctTopics(topics: { input: string; output: string; dlq: string }, source: (flag: 'input' | 'output' | 'dlq') => string): void {
  const { input, output, dlq } = topics;
  if (output === input)
    throw usageError(
      source('output'),
      `"${output}" is also the ${source('input')} topic: dq-kafka would read its own output, enrich it again and write it again, without end (the topic growing, the platform asked again); give the enriched messages a topic of their own, e.g. ${input}.enriched`,
    );
  if (dlq === input)
    throw usageError(
      source('dlq'),
      `"${dlq}" is also the ${source('input')} topic: dq-kafka would read its dead letters again and dead-letter them again, without end; give the dead letters a topic of their own, e.g. ${input}.dlq`,
    );
  if (dlq === output)
    throw usageError(
      source('dlq'),
      `"${dlq}" is also the ${source('output')} topic: the dead letters (the unchecked input, without an answer or with an old one) would be mixed into the enriched messages, where a reader of the output would take them for checked; give the dead letters a topic of their own, e.g. ${output === `${input}.dlq` ? `${input}.enriched.dlq` : `${input}.dlq`}`,
    );
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
