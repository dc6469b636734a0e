import { isUtf8 } from 'node:buffer';
import type { EngineRecord, RecordResult } from '@dq/core';
import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import { extractRecord } from './field-map.js';
import type { FieldMap, FieldMapping } from './field-map.js';
import { memberValueSpans, replaceSpans } from './json-members.js';
import { messageBytes, tooLarge } from './message-size.js';

/** Where an input message came from. */
export interface SourcePosition {
  readonly topic: string;
  readonly partition: number;
  /** Kafka offset, a decimal string (offsets are 64-bit). */
  readonly offset: string;
}

/** DLQ reasons found before the platform is asked (the metrics' `reason` label). */
export type DecodeFailureCode = 'empty-value' | 'not-json' | 'not-object' | 'missing-field' | 'bad-field-type';

/** One input message after decoding: a record for the engine, or a reason to dead-letter it. */
export type Decoded =
  | { kind: 'record'; message: KafkaMessage; value: Record<string, unknown>; record: EngineRecord; /** The value as UTF-8 text. */ text: string }
  /** A keyed message without a value: a deletion of its key (compacted topics), passed on as it is. */
  | { kind: 'tombstone'; message: KafkaMessage }
  | {
      kind: 'reject';
      message: KafkaMessage;
      code: DecodeFailureCode;
      reason: string;
      /** The --map entry the value could not be read with (missing-field, bad-field-type). */
      mapping?: FieldMapping;
    };

/** DLQ header names (README "DLQ"). */
export const DLQ_HEADERS = {
  code: 'dq-error-code',
  message: 'dq-error-message',
  topic: 'dq-original-topic',
  partition: 'dq-original-partition',
  offset: 'dq-original-offset',
  requestId: 'dq-request-id',
  /** What a dead letter too large for --max-message-bytes leaves out: `value`, `headers`, `key`. */
  leftOut: 'dq-left-out',
} as const;

/**
 * Decodes a message value as a UTF-8 JSON object and extracts the mapped fields. A value that is
 * not valid UTF-8 is not JSON text (RFC 8259 section 8.1): decoding it would replace the bad bytes
 * with U+FFFD, so the enriched copy would no longer hold the original value and the platform would
 * be asked about altered text. It goes to the DLQ unchanged, naming the first bad byte.
 */
export function decodeMessage(message: KafkaMessage, map: FieldMap): Decoded {
  // A zero-length key is a key (a compacted topic keeps and deletes it like any other); only a
  // message with no key at all deletes nothing.
  if (message.value === null && message.key !== null) return { kind: 'tombstone', message };
  if (message.value === null || message.value.length === 0) {
    const what = message.value === null ? 'no value and no key (a tombstone deletes a key: it needs one)' : 'an empty value';
    return { kind: 'reject', message, code: 'empty-value', reason: `the message has ${what}` };
  }
  if (!isUtf8(message.value)) {
    const at = firstInvalidUtf8(message.value);
    return {
      kind: 'reject',
      message,
      code: 'not-json',
      reason: `the value is not valid UTF-8 (a malformed sequence starts at byte ${at}, 0x${(message.value[at] ?? 0).toString(16).padStart(2, '0')}), so it is not JSON text; the producer must write UTF-8`,
    };
  }
  const text = message.value.toString('utf8');
  // A leading byte order mark is not JSON (RFC 8259 section 8.1 lets a reader ignore it), but
  // some producers write one: it is read past here and kept in the output, byte for byte.
  const bom = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bom === 1 ? text.slice(1) : text);
  } catch (err) {
    return { kind: 'reject', message, code: 'not-json', reason: `the value is not JSON: ${atByte((err as Error).message, text, bom)}` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const what = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
    return { kind: 'reject', message, code: 'not-object', reason: `the value is ${what}, not a JSON object` };
  }
  const value = parsed as Record<string, unknown>;
  const extracted = extractRecord(value, map, text);
  if (!extracted.ok) return { kind: 'reject', message, code: extracted.code, reason: extracted.message, mapping: extracted.mapping };
  return { kind: 'record', message, value, record: extracted.record, text };
}

/**
 * The enriched message: same key, headers and timestamp, the original value with a `dqField` member
 * added (replacing the value of one of that name): status, class, the corrected address or company
 * hit, the request id, when the platform gave the answer (`checkedAt`; an answer from the result
 * store keeps its own) and the input position. The original members keep their exact text (number
 * precision, order, spacing), also when a `dqField` member's value is replaced.
 */
export function enrichedMessage(decoded: Extract<Decoded, { kind: 'record' }>, result: RecordResult, source: SourcePosition, dqField: string): Message {
  const dq: Record<string, unknown> = { status: result.status };
  if (result.resultClass !== undefined) dq['class'] = result.resultClass;
  if (result.address !== undefined) dq['address'] = result.address;
  // Class E: the candidates are what a reviewer picks from (houseNumberChoice kept).
  if (result.resultClass === 'E' && result.candidates !== undefined) dq['candidates'] = result.candidates;
  if (result.company !== undefined) dq['company'] = result.company;
  // Several hits without a clear winner (review): every hit, for the reviewer to pick from.
  if (result.companies !== undefined) dq['candidates'] = result.companies;
  if (result.hits !== undefined) dq['hits'] = result.hits;
  if (result.vatCode !== undefined) dq['vatCode'] = result.vatCode;
  if (result.requestId !== undefined) dq['requestId'] = result.requestId;
  if (result.checkedAt !== undefined) dq['checkedAt'] = result.checkedAt;
  dq['source'] = { topic: source.topic, partition: source.partition, offset: source.offset };
  const { message } = decoded;
  return { key: message.key, value: withMember(decoded, dqField, dq), headers: copyHeaders(message.headers), timestamp: inputTimestamp(message) };
}

/**
 * A tombstone passed on to the output: its key, headers and timestamp, no value, so a compacted
 * output topic deletes the key as the input did (the platform is not asked: there is nothing to check).
 */
export function tombstoneMessage(message: KafkaMessage): Message {
  return { key: message.key, value: null, headers: copyHeaders(message.headers), timestamp: inputTimestamp(message) };
}

/**
 * The value's JSON text with `name: member` appended. The text parsed as an object, so its last
 * non-whitespace character is its closing brace: splicing there costs one small stringify instead
 * of re-serialising the whole value. A value that already has `name` (an output fed back in, or
 * one enriched in another mode) has that member's value replaced where it stands, every other byte
 * kept. Where the name occurs more than once at the top level, each occurrence is replaced: JSON
 * readers differ in which duplicate they take (JSON.parse the last, others the first), and each
 * must read this answer, not an older one.
 */
function withMember(decoded: Extract<Decoded, { kind: 'record' }>, name: string, member: unknown): string {
  const { value, text } = decoded;
  if (Object.hasOwn(value, name)) return replaceSpans(text, memberValueSpans(text, name), JSON.stringify(member));
  const close = text.lastIndexOf('}');
  return `${text.slice(0, close)}${hasMembers(value) ? ',' : ''}${JSON.stringify(name)}:${JSON.stringify(member)}${text.slice(close)}`;
}

/** Whether an object has an own enumerable member, without listing them all. */
function hasMembers(value: object): boolean {
  for (const key in value) if (Object.hasOwn(value, key)) return true;
  return false;
}

/**
 * `JSON.parse`'s error message with the place it names (`at position N`, UTF-16 units of the text it
 * was given, without a byte order mark) as the byte offset in the value: a Kafka value is bytes,
 * and the two differ at the first character beyond ASCII, or by the byte order mark (README "DLQ").
 */
function atByte(error: string, text: string, bom: number): string {
  return error.replace(/\bat position (\d+)(?: \(line \d+ column \d+\))?/, (_, position: string) => {
    return `at byte ${Buffer.byteLength(text.slice(0, bom + Number(position)))}`;
  });
}

/** Index where the first malformed UTF-8 sequence starts (called only for invalid input). */
function firstInvalidUtf8(bytes: Buffer): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n === 0 || !isUtf8(bytes.subarray(i, i + n))) return i;
    i += n;
  }
  return bytes.length - 1;
}

/** What a DLQ message says about its failure. */
export interface DlqReason {
  code: string;
  message: string;
  requestId?: string | undefined;
}

/**
 * The dead-letter message: original key, value, headers and timestamp, plus the dq-* headers. When
 * that is larger than `maxBytes`, a send the brokers would refuse on every start (so the partition
 * would never move on), parts of the original it has are left out until it fits, in this order: the
 * value (which the limit is usually about), then the original headers, then the key; the dq-* headers
 * stay. `dq-left-out` names what was left out and `dq-error-message` says where to read it (README
 * "Message size").
 */
export function dlqMessage(message: KafkaMessage, source: SourcePosition, reason: DlqReason, maxBytes = Infinity): Message {
  const own: IHeaders = {};
  own[DLQ_HEADERS.code] = reason.code;
  // Header values are bytes; keep them short enough for any broker's limits.
  own[DLQ_HEADERS.message] = cutText(reason.message, 1000);
  own[DLQ_HEADERS.topic] = source.topic;
  own[DLQ_HEADERS.partition] = String(source.partition);
  own[DLQ_HEADERS.offset] = source.offset;
  if (reason.requestId !== undefined) own[DLQ_HEADERS.requestId] = reason.requestId;
  const timestamp = inputTimestamp(message);
  const letter: Message = { key: message.key, value: message.value, headers: { ...copyHeaders(message.headers), ...own }, timestamp };
  if (!tooLarge(letter, maxBytes)) return letter;

  // Left out in turn until the dead letter fits.
  const copied = copyHeaders(message.headers);
  const sizes = {
    value: message.value?.length ?? 0,
    headers: messageBytes({ value: null, headers: copied }) - messageBytes({ value: null }),
    key: message.key?.length ?? 0,
  };
  const parts: Array<keyof typeof sizes> = [];
  const build = (): Message => {
    const left = parts.map((p) => `the ${p} (${sizes[p]} bytes)`);
    const what = left.length === 1 ? `${left[0]!} is` : `${left.slice(0, -1).join(', ')} and ${left[left.length - 1]!} are`;
    own[DLQ_HEADERS.leftOut] = parts.join(',');
    own[DLQ_HEADERS.message] =
      `${cutText(reason.message, 700)}; ${what} left out here: read ${left.length === 1 ? 'it' : 'them'} from ${source.topic} partition ${source.partition} offset ${source.offset} while the topic keeps it`;
    return {
      key: parts.includes('key') ? null : message.key,
      value: parts.includes('value') ? EMPTY : message.value,
      headers: parts.includes('headers') ? { ...own } : { ...copied, ...own },
      timestamp,
    };
  };
  // Only parts that hold something are left out: `dq-left-out` names nothing that was not there.
  let reduced = letter;
  for (const part of ['value', 'headers', 'key'] as const) {
    if (!tooLarge(reduced, maxBytes)) break;
    if (sizes[part] === 0) continue;
    parts.push(part);
    reduced = build();
  }
  // Only dq's own headers are left: a reason text long enough to break the limit alone is cut.
  if (tooLarge(reduced, maxBytes)) reduced.headers![DLQ_HEADERS.message] = cutText(String(own[DLQ_HEADERS.message]), 200);
  return reduced;
}

/**
 * The DLQ reason of a record refused as invalid input (a 400 field error, or refused before any
 * call), naming the offset and each refused field with what is wrong with it, once.
 */
export function invalidInputReason(result: RecordResult, offset: string): DlqReason {
  const error = result.error;
  const violations = error?.violations ?? [];
  const fields = violations.map((v) => `${v.fieldName}: ${v.message}`).join('; ');
  let text: string;
  if (error?.code === 'local-validation' && fields !== '') {
    // No call was made: the message itself (or the --map that read it) has to change.
    text = `refused before sending, nothing was paid: ${fields}; correct these fields of the message, or --map if it reads them from the wrong member`;
  } else {
    // The platform's message names its violations already; any it does not name are added.
    text = error?.message ?? 'the platform refused the input';
    const unnamed = violations.filter((v) => !text.includes(v.message));
    if (unnamed.length > 0) text += ` (${unnamed.map((v) => `${v.fieldName}: ${v.message}`).join('; ')})`;
  }
  return { code: error?.code ?? 'invalid-input', message: `offset ${offset}: ${text}`, requestId: result.requestId ?? error?.requestId };
}

/** dq-kafka's own DLQ header names: a dead letter produced to the input again brings them along. */
const OWN_HEADERS: ReadonlySet<string> = new Set(Object.values(DLQ_HEADERS));

/**
 * The headers to send with a message. A header value may be null in Kafka (kafkajs reads it as
 * null), but kafkajs cannot write one (its size calculation rejects null), so the send would fail
 * on every start and the partition never move on: such a value is written empty (README "DLQ").
 * The dq-* headers of an earlier dead letter are left out: they describe a failure of the past, so
 * an output message carries none and a new dead letter only its own.
 */
function copyHeaders(headers: IHeaders | undefined): IHeaders {
  const out: IHeaders = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined || OWN_HEADERS.has(name)) continue;
    const values: unknown = value;
    // kafkajs reads a header named like a member of Object.prototype (`constructor`, `toString`,
    // `__proto__`) as [that member, its value, ...]: only the header values are sent, or the send
    // would throw on every start (README "Headers").
    const copy = values === null ? EMPTY : Array.isArray(values) ? values.filter(isHeaderValue).map((v) => v ?? EMPTY) : value;
    // Defined, not assigned: a header named `__proto__` would otherwise set the prototype and be lost.
    Object.defineProperty(out, name, { value: copy, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

const isHeaderValue = (v: unknown): v is Buffer | string | null => v === null || typeof v === 'string' || Buffer.isBuffer(v);

const EMPTY = Buffer.alloc(0);

/**
 * `text` cut to at most `max` UTF-16 units, never between the two halves of a character outside
 * the BMP (an emoji cut in two would be sent as U+FFFD).
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/**
 * The input message's timestamp, for its output and dead letter: the event time stays with the
 * message (windows and backfills downstream read it, and a dead letter outlives the input's
 * retention). None (the producer's time) for a message that has none (-1).
 */
function inputTimestamp(message: KafkaMessage): string | undefined {
  const t = message.timestamp;
  return t === undefined || t === null || t === '' || t.startsWith('-') ? undefined : t;
}
