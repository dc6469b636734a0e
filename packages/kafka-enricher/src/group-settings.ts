import { createHash } from 'node:crypto';
import type { ResolvedEnricherOptions } from './options.js';

/**
 * The settings every instance of a group must share (README "One group, one set of settings"): the
 * group splits the input's partitions between its instances, so instances that differ in these
 * would enrich one topic differently per partition, or write it to different topics.
 */
type Shared = Pick<ResolvedEnricherOptions, 'mode' | 'map' | 'country' | 'include' | 'outputTopic' | 'dlqTopic' | 'dqField'>;

/** The flag each shared setting comes from, in the order they are named. */
const FLAGS = { mode: '--mode', map: '--map', country: '--country', include: '--include', output: '--output', dlq: '--dlq', dqField: '--dq-field' } as const;

type Tag = Record<keyof typeof FLAGS, string>;

/** Marks a commit's metadata as dq-kafka's settings tag. */
const TAG_KEY = 'dq-kafka-settings';

/** Longest setting kept as it is in the tag; a longer one is kept as a digest. */
const MAX_SHOWN = 100;

/**
 * The metadata dq-kafka commits with every offset: its shared settings, the mapping and any long
 * value as a digest. A commit's metadata is limited (`offset.metadata.max.bytes`, 4096 bytes by
 * default) and a commit whose metadata is larger is refused, every time. An instance taking over a
 * partition reads it and says when the partition was last committed under other settings.
 */
export function settingsMetadata(o: Shared): string {
  const digest = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
  const shown = (text: string): string => (text.length > MAX_SHOWN ? digest(text) : text);
  const tag: Tag = {
    mode: o.mode,
    map: digest(JSON.stringify([...o.map].map((m) => `${m.field}=${m.pointer.text}`).sort())),
    country: o.country ?? '',
    include: shown([...(o.include ?? [])].sort().join(',')),
    output: shown(o.outputTopic),
    dlq: shown(o.dlqTopic),
    dqField: shown(o.dqField),
  };
  return JSON.stringify({ [TAG_KEY]: tag });
}

/**
 * The flags in which the commit metadata `theirs` differs from `ours` (`--mode company, here
 * address`), or none when they agree or `theirs` is not dq-kafka's (no metadata, another client's,
 * an operator's reset): such commits say nothing about the settings.
 */
export function settingsDiffer(ours: string, theirs: string | null | undefined): string[] {
  const a = parseTag(ours);
  const b = parseTag(theirs);
  if (a === undefined || b === undefined) return [];
  return (Object.keys(FLAGS) as Array<keyof Tag>)
    .filter((k) => a[k] !== b[k])
    .map((k) => (k === 'map' ? `${FLAGS.map} (another mapping)` : `${FLAGS[k]} ${JSON.stringify(b[k])} (here ${JSON.stringify(a[k])})`));
}

function parseTag(text: string | null | undefined): Tag | undefined {
  if (!text) return undefined;
  try {
    const tag = (JSON.parse(text) as Record<string, unknown>)[TAG_KEY];
    if (typeof tag !== 'object' || tag === null) return undefined;
    return Object.fromEntries(Object.keys(FLAGS).map((k) => [k, String((tag as Record<string, unknown>)[k] ?? '')])) as Tag;
  } catch {
    return undefined;
  }
}
