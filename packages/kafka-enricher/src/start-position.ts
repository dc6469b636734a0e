import type { Logger } from '@dq/core';
import type { Kafka } from 'kafkajs';
import type { ResolvedEnricherOptions } from './options.js';

/** A partition's committed offset and the offsets its log holds (`earliest` to `end`, exclusive). */
export interface PartitionPosition {
  partition: number;
  /** The group's committed offset ('-1': none). */
  committed: string;
  earliest: string;
  end: string;
}

/**
 * Where the consumer starts reading partitions without a usable committed offset (README "Committed
 * offsets"), and a warning for each committed offset the input no longer holds. kafkajs resets an
 * offset it cannot fetch (OFFSET_OUT_OF_RANGE) to the subscription's start, silently: at the end,
 * that would skip every message the topic still holds behind a lost offset (a recreated topic, an
 * operator's reset past the end, retention that overtook a stopped group). So `--from-latest` applies
 * only to a group that has committed nothing on the input yet; a group with offsets starts at the
 * earliest offset the log still holds wherever its own offset is unusable: nothing kept is skipped,
 * and messages read again are answered from the result store. Returns `fromBeginning`.
 */
export async function startPosition(
  kafka: Kafka,
  o: Pick<ResolvedEnricherOptions, 'groupId' | 'inputTopic' | 'fromBeginning'>,
  connect: (what: string, step: () => Promise<void>) => Promise<void>,
  logger: Logger,
): Promise<boolean> {
  const admin = kafka.admin();
  const positions: PartitionPosition[] = [];
  try {
    await connect('admin client', async () => {
      await admin.connect();
      const [committed, ends] = await Promise.all([admin.fetchOffsets({ groupId: o.groupId, topics: [o.inputTopic] }), admin.fetchTopicOffsets(o.inputTopic)]);
      const byPartition = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
      for (const e of ends) positions.push({ partition: e.partition, committed: byPartition.get(e.partition) ?? '-1', earliest: e.low, end: e.high });
    });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  for (const p of positions) {
    const lost = outOfRange(p);
    if (lost !== undefined)
      logger.warn(`committed offset out of range: ${lost}`, {
        topic: o.inputTopic,
        partition: p.partition,
        committedOffset: p.committed,
        earliestOffset: p.earliest,
        endOffset: p.end,
      });
  }
  // '-1' is no commit; kafkajs itself commits -2 (earliest) when it resets an offset.
  return o.fromBeginning || positions.some((p) => p.committed !== '-1');
}

/** What the warning of a committed offset outside the log says, or undefined when the log holds it. */
export function outOfRange({ committed, earliest, end }: PartitionPosition): string | undefined {
  const offset = BigInt(committed);
  if (offset < 0n) return undefined;
  if (offset < BigInt(earliest)) {
    return (
      `messages from offset ${committed} to ${BigInt(earliest) - 1n} were deleted (retention) before the group read them, and are in neither the output nor the DLQ; ` +
      `reading from offset ${earliest}, the earliest the topic still holds`
    );
  }
  if (offset > BigInt(end)) {
    return (
      `the offset is past the end of the partition (${end}): the topic was deleted and created again, or the group's offsets were set past its end; ` +
      `reading again from offset ${earliest}, the earliest the topic holds (answers in the result store are not bought again)`
    );
  }
  return undefined;
}
