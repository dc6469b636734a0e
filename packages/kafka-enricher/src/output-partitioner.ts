import { Partitioners } from 'kafkajs';
import type { ICustomPartitioner, Message } from 'kafkajs';

const inputPartitions = new WeakMap<Message, number>();

/**
 * Remembers the input partition of an output message without a key (keyed messages are placed by
 * their key, so they are not tagged: a WeakMap entry per message is a cost the collector feels).
 */
export function tagInputPartition(message: Message, partition: number): Message {
  if (message.key === null || message.key === undefined) inputPartitions.set(message, partition);
  return message;
}

/**
 * kafkajs's default (Java-compatible murmur2) partitioner, except that a message without a key goes
 * to its input partition number modulo the output's partition count instead of round-robin, so the
 * order of an input partition survives for unkeyed messages too. Keyed messages keep per-key order.
 */
export const orderPreservingPartitioner: ICustomPartitioner = () => {
  const byKey = Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    const input = inputPartitions.get(message);
    if ((message.key === null || message.key === undefined) && input !== undefined && partitionMetadata.length > 0) {
      return input % partitionMetadata.length;
    }
    return byKey(args);
  };
};
