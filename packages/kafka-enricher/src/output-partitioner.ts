import { Partitioners } from 'kafkajs';
import type { ICustomPartitioner, Message } from 'kafkajs';

const inputPartitions = new WeakMap<Message, number>();

/** Remembers the input partition of an output message, for a message without a key. */
export function tagInputPartition(message: Message, partition: number): Message {
  inputPartitions.set(message, partition);
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
