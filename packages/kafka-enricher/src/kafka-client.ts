import type { Logger } from '@dq/core';
import { Kafka, logLevel } from 'kafkajs';
import type { KafkaConfig, LogEntry, SASLOptions } from 'kafkajs';
import { registerCompressionCodecs } from './compression.js';
import type { ResolvedEnricherOptions } from './options.js';

/** The kafkajs client for the options' brokers, TLS and SASL, logging through `logger`; it reads every compression Kafka has. */
export function createKafka(options: ResolvedEnricherOptions, logger: Logger): Kafka {
  registerCompressionCodecs();
  const log = logger.child({ component: 'kafkajs' });
  if (options.sasl) log.redactor.add(options.sasl.password);
  const config: KafkaConfig = {
    clientId: options.clientId,
    brokers: options.brokers,
    logLevel: logger.level === 'debug' ? logLevel.DEBUG : logLevel.WARN,
    logCreator: () => (entry: LogEntry) => {
      // kafkajs adds the stack of the error it logs: the message says what failed, the stack is
      // kafkajs's internals (the error lines of every dq tool carry none).
      const { message, stack: _stack, ...fields } = entry.log as LogEntry['log'] & { stack?: unknown };
      const line = { namespace: entry.namespace, ...fields };
      if (entry.level <= logLevel.ERROR) log.error(message, line);
      else if (entry.level === logLevel.WARN) log.warn(message, line);
      else if (entry.level === logLevel.INFO) log.info(message, line);
      else log.debug(message, line);
    },
  };
  if (options.ssl !== undefined) config.ssl = options.ssl;
  if (options.sasl) config.sasl = { ...options.sasl } as SASLOptions;
  return new Kafka(config);
}
