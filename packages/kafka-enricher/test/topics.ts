import { Kafka, logLevel } from 'kafkajs';
import { uniqueGroup } from '@dq/test-support/kafka';

const kafkaFor = (brokers: string[]): Kafka => new Kafka({ brokers, clientId: 'dq-test-topics', logLevel: logLevel.NOTHING });

/**
 * Creates `topics` through the brokers' automatic topic creation (the mock cluster has no admin
 * CreateTopics): a consumer that may create topics subscribes to them, without joining a group.
 */
export async function createTopics(brokers: string[], topics: string[]): Promise<void> {
  const consumer = kafkaFor(brokers).consumer({ groupId: uniqueGroup('create-topics'), allowAutoTopicCreation: true });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics });
  } finally {
    await consumer.disconnect();
  }
}

/** Every topic the brokers have, listed without naming (and so without auto-creating) any. */
export async function listTopics(brokers: string[]): Promise<string[]> {
  const admin = kafkaFor(brokers).admin();
  await admin.connect();
  try {
    return await admin.listTopics();
  } finally {
    await admin.disconnect();
  }
}
