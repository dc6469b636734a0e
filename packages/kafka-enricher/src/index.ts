// The package's interface: the enricher (programmatic and CLI), its options, outcome, metrics and errors.
// Internals (field maps, JSON pointers, the message codec) are not exported: tests import them from src/.
export { createEnricher } from './enricher.js';
export type { Enricher, EnricherOutcome, EnricherState } from './enricher.js';
export type { EnricherOptions, SaslOptions } from './options.js';
export { DLQ_HEADERS } from './message-codec.js';
export type { DlqReason } from './message-codec.js';
export { Metrics, METRIC } from './metrics.js';
export { startMetricsServer } from './metrics-server.js';
export type { MetricsServer } from './metrics-server.js';
export { KafkaEnricherError } from './errors.js';
export { main } from './main.js';
export { USAGE } from './cli-args.js';
