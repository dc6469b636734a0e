import { connect } from 'node:tls';
import { KafkaEnricherError } from './errors.js';
import type { EnricherOptions } from './options.js';

/**
 * Node's codes for a broker certificate that does not verify against the trusted CAs (OpenSSL's
 * X509 verification results).
 */
const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
]);

/** `err` and the errors it wraps (kafkajs wraps a connection's error once its retries are used up). */
export function* causes(err: unknown): Generator<Error> {
  for (let e: unknown = err; e instanceof Error; e = e.cause) yield e;
}

/**
 * The error that ends the run when `err` is a refusal wrong TLS or SASL settings cause (README,
 * dq-kafka "TLS and SASL"): retrying would meet it again, so it is exit 2 (`kafka-tls`,
 * `kafka-sasl`) with the setting to fix; undefined for any other failure. Never names the password.
 * `firstContact`: no connection of the run got through yet, so a connection reset during the TLS
 * handshake means a port without TLS rather than a broker going away.
 */
export function kafkaSettingFailure(err: unknown, o: Pick<EnricherOptions, 'ssl' | 'sasl'>, firstContact = false): KafkaEnricherError | undefined {
  for (const e of causes(err)) {
    const { code, broker, apiName } = e as Error & { code?: unknown; broker?: unknown; apiName?: unknown };
    const at = typeof broker === 'string' ? `broker ${broker}` : 'a broker';
    const tls = (message: string): KafkaEnricherError => new KafkaEnricherError('kafka-tls', message, { cause: err });
    const why = e.message.replace(/^Connection error: /, '');
    if (e.name === 'KafkaJSSASLAuthenticationError') {
      const who = o.sasl ? ` of user "${o.sasl.username}" (${o.sasl.mechanism})` : '';
      return new KafkaEnricherError(
        'kafka-sasl',
        `the brokers refused the SASL login${who}: ${e.message}; check --sasl-mechanism, --sasl-username and the password (DQ_KAFKA_SASL_PASSWORD)`,
        { cause: err },
      );
    }
    if (e.name === 'KafkaJSServerDoesNotSupportApiKey' && typeof apiName === 'string' && apiName.startsWith('Sasl')) {
      return new KafkaEnricherError(
        'kafka-sasl',
        `the brokers do not offer SASL on the port of --brokers (${e.message}: ${apiName}): use the brokers' SASL listener in --brokers, or leave out the --sasl-* settings`,
        { cause: err },
      );
    }
    if (typeof code !== 'string') continue;
    if (UNTRUSTED.has(code)) {
      return tls(
        `the TLS certificate of ${at} is not trusted (${why}): give the CA that signed it with --ssl-ca <PEM file> (--ssl-insecure skips the check, for testing only)`,
      );
    }
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
      return tls(`the TLS certificate of ${at} does not name that host (${why}): use in --brokers a host name the certificate names`);
    }
    if (code.startsWith('ERR_SSL_') && code.includes('ALERT')) {
      return tls(
        `${at} refused the TLS handshake (${why}): check --ssl-cert and --ssl-key (a client certificate the brokers accept) and the TLS version the brokers allow`,
      );
    }
    // A plaintext listener reads a TLS hello as a request it cannot take and drops the connection
    // (a Kafka broker, the mock cluster) or answers bytes that are no TLS record (ERR_SSL_*).
    if (o.ssl !== undefined && o.ssl !== false && (code.startsWith('ERR_SSL_') || (code === 'ECONNRESET' && firstContact))) {
      return tls(
        `${at} ended the TLS handshake (${why}): it does not seem to speak TLS on this port; use the brokers' TLS listener in --brokers, or leave out --ssl`,
      );
    }
  }
  return undefined;
}

/**
 * The first of `brokers` whose port completes a TLS handshake (certificate not checked: only
 * whether it speaks TLS), within `timeoutMs`; undefined when none does. Asked when a run without
 * `--ssl` could not make its first connection: a Kafka TLS listener takes the plaintext request as
 * a broken handshake and drops it, which kafkajs reports like a broker that is down.
 */
export async function brokerSpeakingTls(brokers: readonly string[], timeoutMs = 3_000): Promise<string | undefined> {
  const answers = await Promise.all(
    brokers.map(
      (broker) =>
        new Promise<boolean>((resolve) => {
          const at = broker.lastIndexOf(':');
          const host = broker.slice(0, at).replace(/^\[|\]$/g, '');
          const port = Number(broker.slice(at + 1));
          if (at <= 0 || !Number.isInteger(port)) return resolve(false);
          const socket = connect({ host, port, rejectUnauthorized: false, ...(/^[\d.:]+$/.test(host) ? {} : { servername: host }) });
          const done = (tls: boolean) => {
            clearTimeout(timer);
            socket.destroy();
            resolve(tls);
          };
          const timer = setTimeout(() => done(false), timeoutMs);
          socket.once('secureConnect', () => done(true));
          socket.once('error', () => done(false));
          socket.once('close', () => done(false));
        }),
    ),
  );
  return brokers.find((_, i) => answers[i]);
}

/** The error that ends a run without `--ssl` whose `broker` speaks TLS (see {@link brokerSpeakingTls}). */
export function tlsExpected(broker: string, cause: unknown): KafkaEnricherError {
  return new KafkaEnricherError(
    'kafka-tls',
    `broker ${broker} speaks TLS on this port (it completed a TLS handshake) and dq-kafka connected without: add --ssl, with --ssl-ca <PEM file> when a private CA signed its certificate`,
    { cause },
  );
}
