import type { Message, TopicMessages } from 'kafkajs';

/**
 * What a broker's size limit (`message.max.bytes`, or a topic's `max.message.bytes`) means for the
 * sends: it caps the record batch of one partition in a produce request, and kafkajs puts all the
 * messages of one send for a partition into one batch. So the messages of a chunk are sent in as
 * many sends as keep each within the limit (README "Message size"), counted generously: every
 * message of a send as if it went to one partition, uncompressed.
 */

/** Bytes a record takes in a batch beyond its key, value and headers (its varint lengths, attributes and deltas), at most. */
const RECORD_OVERHEAD = 24;
/** The same for each header: its two varint lengths. */
const HEADER_OVERHEAD = 10;
/** Bytes of a send beyond its records: the record batch header (61), the request's topic and partition fields. */
export const SEND_OVERHEAD = 1024;

const length = (v: Buffer | string | null | undefined): number => (v === null || v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length);

/** The bytes `message` adds to a record batch, at most. */
export function messageBytes(message: Message): number {
  let n = RECORD_OVERHEAD + length(message.key) + length(message.value);
  const headers = message.headers;
  if (headers !== undefined) {
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      const values = Array.isArray(value) ? value : [value];
      for (const v of values) n += HEADER_OVERHEAD + Buffer.byteLength(name) + length(v as Buffer | string | null);
    }
  }
  return n;
}

/** Whether `message` alone is too large for a send under `limit`. */
export function tooLarge(message: Message, limit: number): boolean {
  return SEND_OVERHEAD + messageBytes(message) > limit;
}

/**
 * `topicMessages` split into sends of at most `limit` bytes each, in order (a topic's messages keep
 * their order across the sends). One send when they fit, which is the usual case. Each message must
 * fit alone ({@link tooLarge}).
 */
export function splitSends(topicMessages: readonly TopicMessages[], limit: number): TopicMessages[][] {
  const sends: TopicMessages[][] = [];
  let send: TopicMessages[] = [];
  let bytes = SEND_OVERHEAD;
  for (const { topic, messages } of topicMessages) {
    let current: Message[] = [];
    for (const message of messages) {
      const size = messageBytes(message);
      if (bytes + size > limit && (current.length > 0 || send.length > 0)) {
        if (current.length > 0) send.push({ topic, messages: current });
        sends.push(send);
        send = [];
        current = [];
        bytes = SEND_OVERHEAD;
      }
      current.push(message);
      bytes += size;
    }
    if (current.length > 0) send.push({ topic, messages: current });
  }
  if (send.length > 0) sends.push(send);
  return sends;
}
