import type { Kafka } from 'kafkajs';
import { nearestNames } from '@dq/core/cli';
import { KafkaEnricherError } from './errors.js';
import type { ResolvedEnricherOptions } from './options.js';

/** Existing topics at most this many edits away from a missing one are named as what the user may have meant. */
const NEAR_EDITS = 2;

/**
 * Checks at start that the input, output and DLQ topics exist, without creating any (README,
 * dq-kafka "Topics"): brokers with `auto.create.topics.enable` create a topic that a metadata
 * request names, and librdkafka's mock cluster does so even when the request forbids it, so the
 * topics are looked up in the list of all topics, which names none. With `createTopics`, a missing
 * output or DLQ topic is created by the brokers. `connect` wraps the admin client's failures.
 * Throws `topic-missing` (exit 2) naming each missing topic, its flag and the nearest existing names.
 */
export async function checkTopics(
  kafka: Kafka,
  o: Pick<ResolvedEnricherOptions, 'inputTopic' | 'outputTopic' | 'dlqTopic' | 'createTopics' | 'groupId'>,
  connect: (what: string, step: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const admin = kafka.admin();
  const absent = async (flags: Array<[flag: string, topic: string]>): Promise<{ left: Array<[string, string]>; existing: Set<string> }> => {
    let names: string[] = [];
    await connect('admin client', async () => void (names = await admin.listTopics()));
    const existing = new Set(names);
    return { left: flags.filter(([, topic]) => !existing.has(topic)), existing };
  };
  const them = (n: number, one: string, more: string): string => (n > 1 ? more : one);
  try {
    // Inside the try: a connection that failed after its socket opened (a refused login) is closed too.
    await connect('admin client', () => admin.connect());
    const input = await absent([['--input', o.inputTopic]]);
    if (input.left.length > 0) throw missing(input.left, input.existing, 'correct --input, or create the topic, then start again');
    const written: Array<[string, string]> = [
      ['--output', o.outputTopic],
      ['--dlq', o.dlqTopic],
    ];
    let { left, existing } = await absent(written);
    if (left.length > 0 && o.createTopics) {
      await autoCreate(
        kafka,
        o.groupId,
        left.map(([, topic]) => topic),
      );
      ({ left, existing } = await absent(written));
      const n = left.length;
      if (n > 0)
        throw missing(
          left,
          existing,
          `the brokers did not create ${them(n, 'it', 'them')} (is auto.create.topics.enable off?): create ${them(n, 'the topic', 'the topics')} yourself, then start again`,
        );
    }
    const n = left.length;
    if (n > 0) {
      const flags = left.map(([flag]) => flag).join(' and ');
      throw missing(
        left,
        existing,
        `correct ${flags}, create the ${them(n, 'topic', 'topics')}, or pass --create-topics to have the brokers create ${them(n, 'it', 'them')}, then start again`,
      );
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Has the brokers create `topics` with their defaults (partitions, replication) through automatic
 * topic creation: a consumer that may create topics subscribes to them, which asks for their
 * metadata and joins no group. Failures are left to the check that follows.
 */
async function autoCreate(kafka: Kafka, groupId: string, topics: string[]): Promise<void> {
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: true, retry: { retries: 2 } });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics });
  } catch {
    // The list of topics read next says whether they were created.
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
}

function missing(topics: Array<[string, string]>, existing: Set<string>, advice: string): KafkaEnricherError {
  const each = topics.map(([flag, topic]) => {
    const near = nearest(topic, existing);
    return `${flag} topic "${topic}" does not exist on the brokers${near.length > 0 ? ` (nearest existing: ${near.map((n) => `"${n}"`).join(', ')})` : ''}`;
  });
  return new KafkaEnricherError('topic-missing', `${each.join('; ')}; ${advice}`, { topic: topics[0]![1] });
}

/** Up to three existing topics (internal `__` ones left out) at most {@link NEAR_EDITS} edits from `topic`, nearest first. */
export function nearest(topic: string, existing: Iterable<string>): string[] {
  const candidates = [...existing].filter((t) => !t.startsWith('__')).sort((a, b) => a.localeCompare(b));
  return nearestNames(topic, candidates, { maxEdits: NEAR_EDITS, prefixes: false }).slice(0, 3);
}
