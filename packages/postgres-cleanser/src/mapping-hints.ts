import { mapFlag, MODE_FIELDS } from '@dq/core/engine';
import type { FieldColumn } from '@dq/core/engine';
import type { Mode } from '@dq/core';
import type { MappedColumn } from './preflight.js';

/** The hint when every row of the first page came back invalid-input. */
export function allInvalidHint(mode: Mode, rows: number, mapped: readonly MappedColumn[], lookalikes: readonly FieldColumn[]): string {
  const head = `every row of the first page (${rows}) came back invalid-input: the mapped columns (${mapFlag(mode, mapped)}) do not hold enough for ${mode === 'address' ? 'an address' : `a ${mode}`} check.`;
  if (lookalikes.length > 0) return `${head} The table has columns that look like the missing fields: --map ${mapFlag(mode, [...mapped, ...lookalikes])}`;
  const missing = (MODE_FIELDS[mode] as readonly string[]).filter((f) => !mapped.some((m) => m.field === f));
  return `${head} Map the columns that hold ${missing.join(', ')} with --map field=column,…`;
}
