// Type declarations for kafkajs's table of Kafka's error answers, which kafkajs ships without types
// (see refusedByGroup in src/enricher.ts).

declare module 'kafkajs/src/protocol/error.js' {
  /** Each error code of the Kafka protocol: its kafkajs type (e.g. REBALANCE_IN_PROGRESS) and the message kafkajs gives it. */
  export const errorCodes: readonly { type: string; code: number; retriable: boolean; message: string; helpUrl?: string }[];
}
