import { MODE_FIELDS } from '@dq/core/engine';
import { mapEntries } from '@dq/core/cli';
import type { EngineRecord, Mode } from '@dq/core';
import { usageError } from './errors.js';
import { pointerValueSpan } from './json-members.js';
import { parsePointer, resolvePointer } from './json-pointer.js';
import type { JsonPointer } from './json-pointer.js';

/** One mapping entry: the engine's request field and where its value sits in a message. */
export interface FieldMapping {
  readonly field: string;
  readonly pointer: JsonPointer;
}

/** Request fields taken from each message value, in the order given. */
export type FieldMap = readonly FieldMapping[];

/**
 * Parses `--map street=/address/street,houseNumber=/address/no,...`. Field names must be request
 * fields of `mode` (MODE_FIELDS); pointers are RFC 6901 (`~1` for `/`, `~0` for `~`). A pointer to
 * a member whose name holds a comma or spaces at its ends is quoted ({@link mapEntries}). Several
 * `--map` texts add up, as if written as one.
 *
 * @throws KafkaEnricherError `usage` naming the entry at fault.
 */
export function parseFieldMap(text: string | readonly string[], mode: Mode): FieldMap {
  const allowed: readonly string[] = MODE_FIELDS[mode];
  const seen = new Set<string>();
  const entries = (typeof text === 'string' ? [text] : text).flatMap((t) => mapEntries(t, 'pointer', (problem) => usageError('--map', problem)));
  if (entries.length === 0) throw usageError('--map', 'at least one <field>=<json pointer> is needed, e.g. street=/address/street');
  return entries.map(({ text: entry, field, value }) => {
    if (value === undefined || field === '') throw usageError('--map', `"${entry}" must look like <field>=<json pointer>, e.g. street=/address/street`);
    if (!allowed.includes(field)) throw usageError('--map', `"${field}" is not a ${mode} request field; use one of ${allowed.join(', ')}`);
    if (seen.has(field)) throw usageError('--map', `"${field}" is mapped twice`);
    seen.add(field);
    if (value === '') throw usageError('--map', `"${field}" needs a non-empty JSON pointer, e.g. ${field}=/${field}`);
    try {
      return { field, pointer: parsePointer(value) };
    } catch (err) {
      throw usageError('--map', `${field}: ${(err as Error).message}`);
    }
  });
}

/** Why a message value cannot be turned into a record (DLQ reason codes). */
export type ExtractFailureCode = 'missing-field' | 'bad-field-type';

/** The record of one message value, or why there is none. */
export type Extracted = { ok: true; record: EngineRecord } | { ok: false; code: ExtractFailureCode; message: string; mapping: FieldMapping };

/**
 * Reads every mapped field from a message value (a JSON object). A pointer that refers to nothing,
 * to `null` or to an empty string is a missing field; one that refers to an object, array or
 * boolean has the wrong type. Strings are taken as they are (the engine trims them). A number is
 * taken as JavaScript writes it where that is the number written (`100` for `1e2` or `100.0`), and
 * otherwise, given the value's `text`, as written there: a double would round
 * `12345678901234567890` to `12345678901234567000` and `1e400` to `Infinity` (README "Mapping").
 */
export function extractRecord(value: Readonly<Record<string, unknown>>, map: FieldMap, text?: string): Extracted {
  const record: Record<string, string | number> = {};
  for (const mapping of map) {
    const { field, pointer } = mapping;
    const found = resolvePointer(value, pointer);
    if (found === undefined || found === null || (typeof found === 'string' && found.trim() === '')) {
      return { ok: false, code: 'missing-field', message: `mapped field ${field} (${pointer.text}) is missing or empty`, mapping };
    }
    if (typeof found !== 'string' && typeof found !== 'number') {
      return {
        ok: false,
        code: 'bad-field-type',
        mapping,
        message: `mapped field ${field} (${pointer.text}) is ${Array.isArray(found) ? 'an array' : typeof found === 'object' ? 'an object' : `a ${typeof found}`}, not a string or number`,
      };
    }
    if (typeof found === 'number' && text !== undefined) {
      const span = pointerValueSpan(text, pointer.tokens);
      record[field] = span === undefined ? found : numberText(found, text.slice(span[0], span[1]));
    } else {
      record[field] = found;
    }
  }
  return { ok: true, record };
}

/** A mapped number's text: as JavaScript writes `value` when that is the number `written`, else `written`. */
function numberText(value: number, written: string): string {
  const js = String(value);
  if (!Number.isFinite(value)) return written;
  const [a, b] = [decimal(js), decimal(written)];
  return a.digits === b.digits && (a.digits === '' || (a.exponent === b.exponent && a.negative === b.negative)) ? js : written;
}

/** A JSON number's decimal value: its sign, its digits without leading or trailing zeros ('' for zero) and the power of ten of the last. */
function decimal(text: string): { negative: boolean; digits: string; exponent: bigint } {
  const [, sign, int = '', frac = '', exp = '0'] = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]\+?(-?\d+))?$/.exec(text) ?? [];
  const significant = `${int}${frac}`.replace(/^0+/, '');
  const digits = significant.replace(/0+$/, '');
  return { negative: sign === '-', digits, exponent: BigInt(exp) - BigInt(frac.length) + BigInt(significant.length - digits.length) };
}
