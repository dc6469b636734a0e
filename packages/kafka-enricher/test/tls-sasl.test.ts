import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:tls';
import type { Server } from 'node:tls';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { KafkaJSNumberOfRetriesExceeded, KafkaJSSASLAuthenticationError } from 'kafkajs';
import { cliArgs, killIfRunning, produce, spawnEnricher, uniqueGroup, uniqueTopic } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';
import { useKafka, useSandbox, useTempDir } from '@dq/test-support/use';
import { kafkaSettingFailure } from '../src/kafka-settings.js';
import { errorLines, exitWithin } from './exit.js';

// Wrong TLS or SASL settings are not a passing outage: retrying (exit 75) repeats the same refusal
// forever. dq-kafka ends such a run with exit 2 and one line naming the setting to fix.

const kafka = useKafka();
const sandbox = useSandbox();
const dir = useTempDir('dq-kafka-tls-');
let run: Running | undefined;
afterEach(() => killIfRunning(run));

/** A TLS server with a self-signed certificate for "localhost" (it never speaks Kafka: the handshake is where it ends). */
let tlsServer: Server;
let tlsPort: number;
const certFile = join(dir, 'cert.pem');
beforeAll(async () => {
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
    ],
    {
      stdio: 'ignore',
    },
  );
  tlsServer = createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (socket) => socket.destroy());
  tlsServer.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
  tlsPort = (tlsServer.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => (tlsServer ? tlsServer.close(() => resolve()) : resolve())));

const names = () => ({ input: uniqueTopic('in'), output: uniqueTopic('out'), dlq: uniqueTopic('dlq'), group: uniqueGroup() });

it('--ssl against a plaintext broker: exit 2 with one line saying the broker does not speak TLS and what to change', async () => {
  const n = names();
  await produce(kafka.brokers, n.input, [{ value: '{}' }]);
  run = spawnEnricher(cliArgs(kafka.brokers, n, ['--ssl']), sandbox.env());
  expect(await exitWithin(run, 60_000)).toBe(2);
  expect(errorLines(run)).toHaveLength(1);
  expect(errorLines(run)[0]).toMatch(
    new RegExp(
      `^dq-kafka: kafka-tls: broker ${kafka.brokers[0]} ended the TLS handshake \\(.*\\): it does not seem to speak TLS on this port; use the brokers' TLS listener in --brokers, or leave out --ssl$`,
    ),
  );
  expect(run.stderr()).not.toMatch(/\n\s+at |"stack"/);
}, 90_000);

it('no --ssl against a broker port that speaks TLS: exit 2 saying to add --ssl, not 75 (a scheduler would retry it for ever)', async () => {
  run = spawnEnricher(cliArgs([`localhost:${tlsPort}`], names()), sandbox.env());
  expect(await exitWithin(run, 60_000)).toBe(2);
  expect(errorLines(run)).toHaveLength(1);
  expect(errorLines(run)[0]).toBe(
    `dq-kafka: kafka-tls: broker localhost:${tlsPort} speaks TLS on this port (it completed a TLS handshake) and dq-kafka connected without: add --ssl, with --ssl-ca <PEM file> when a private CA signed its certificate`,
  );
}, 90_000);

it('a broker certificate no trusted CA signed: exit 2, naming --ssl-ca', async () => {
  run = spawnEnricher(cliArgs([`localhost:${tlsPort}`], names(), ['--ssl']), sandbox.env());
  expect(await exitWithin(run, 60_000)).toBe(2);
  expect(errorLines(run)).toHaveLength(1);
  expect(errorLines(run)[0]).toBe(
    `dq-kafka: kafka-tls: the TLS certificate of broker localhost:${tlsPort} is not trusted (self-signed certificate): give the CA that signed it with --ssl-ca <PEM file> (--ssl-insecure skips the check, for testing only)`,
  );
}, 90_000);

it('a broker certificate that does not name the host in --brokers: exit 2, saying to use a name the certificate names', async () => {
  run = spawnEnricher(cliArgs([`127.0.0.1:${tlsPort}`], names(), ['--ssl-ca', certFile]), sandbox.env());
  expect(await exitWithin(run, 60_000)).toBe(2);
  expect(errorLines(run)).toHaveLength(1);
  expect(errorLines(run)[0]).toMatch(
    new RegExp(
      `^dq-kafka: kafka-tls: the TLS certificate of broker 127\\.0\\.0\\.1:${tlsPort} does not name that host \\(.*\\): use in --brokers a host name the certificate names$`,
    ),
  );
}, 90_000);

it('SASL against a broker that offers none (the mock cluster): exit 2 naming the --sasl-* settings, never the password', async () => {
  const password = 'sasl-pw-7f3e1c';
  const n = names();
  await produce(kafka.brokers, n.input, [{ value: '{}' }]);
  run = spawnEnricher(cliArgs(kafka.brokers, n, ['--sasl-mechanism', 'plain', '--sasl-username', 'etl']), {
    ...sandbox.env(),
    DQ_KAFKA_SASL_PASSWORD: password,
  });
  expect(await exitWithin(run, 60_000)).toBe(2);
  expect(errorLines(run)).toHaveLength(1);
  expect(errorLines(run)[0]).toMatch(
    new RegExp(
      `^dq-kafka: kafka-sasl: the brokers do not offer SASL on the port of --brokers \\(.*\\): use the brokers' SASL listener in --brokers, or leave out the --sasl-\\* settings$`,
    ),
  );
  expect(run.stderr() + run.stdout()).not.toContain(password);
}, 90_000);

// The mock cluster has no SASL, so a refused login is classified from the error kafkajs raises for it.
// (kafkajs's types leave out the message its error constructors take.)
const saslRefused = (message: string): Error => new (KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error)(message);
it.each([
  ['as kafkajs raises it', saslRefused('SASL PLAIN authentication failed: Authentication failed: Invalid username or password')],
  [
    'after kafkajs retried the connection',
    new KafkaJSNumberOfRetriesExceeded(saslRefused('SASL SCRAM SHA256 authentication failed: Authentication failed during authentication'), {
      retryCount: 5,
      retryTime: 100,
    }),
  ],
])('a refused SASL login (%s) is a setting to fix, exit 2, naming mechanism and user, never the password', (_, err) => {
  const failure = kafkaSettingFailure(err, { ssl: undefined, sasl: { mechanism: 'plain', username: 'etl', password: 'pw-secret' } });
  expect(failure?.code).toBe('kafka-sasl');
  expect(failure?.exitCode).toBe(2);
  expect(failure?.message).toMatch(
    /^the brokers refused the SASL login of user "etl" \(plain\): SASL .* authentication failed: .*; check --sasl-mechanism, --sasl-username and the password \(DQ_KAFKA_SASL_PASSWORD\)$/,
  );
  expect(failure?.message).not.toContain('pw-secret');
});

it('an unreachable broker, or a reset once connections got through (a broker going away), is no setting failure: it stays kafka-failure (exit 75)', () => {
  const refused = Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:1'), {
    name: 'KafkaJSConnectionError',
    code: 'ECONNREFUSED',
    broker: '127.0.0.1:1',
  });
  expect(kafkaSettingFailure(refused, { ssl: true, sasl: undefined }, true)).toBeUndefined();
  const reset = Object.assign(new Error('Connection error: read ECONNRESET'), { name: 'KafkaJSConnectionError', code: 'ECONNRESET', broker: '127.0.0.1:9' });
  expect(kafkaSettingFailure(reset, { ssl: undefined, sasl: undefined }, true)).toBeUndefined();
  expect(kafkaSettingFailure(reset, { ssl: true, sasl: undefined }, false)).toBeUndefined();
  expect(kafkaSettingFailure(reset, { ssl: true, sasl: undefined }, true)?.code).toBe('kafka-tls');
});
