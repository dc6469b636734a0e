import { type EngineRecord, type Mode } from '@dq/core';
import { autoMappingHint, mapFlag, MODE_FIELDS, unmappedLookalikes } from '@dq/core/engine';
import { mapEntries } from '@dq/core/cli';
import { CsvError, usageError } from './errors.js';
import { JsonNumber, stringifyJson } from './source/lossless-json.js';
import type { SourceRow } from './source/types.js';

/** Request field → input column (CSV header name or JSON key). */
export type FieldMap = Readonly<Record<string, string>>;

/**
 * Parses `--map street=Strasse,houseNumber=Nr,...` ({@link mapEntries}: a name holding a comma or
 * edge spaces is quoted); several `--map` texts add up, as if written as one. Fields must belong to `mode` (contract 2.1, 4.7); a column name may
 * contain `=` after the first one. A quoted `""` names a column with an empty name.
 */
export function parseFieldMap(text: string | readonly string[], mode: Mode): FieldMap {
  const allowed: readonly string[] = MODE_FIELDS[mode];
  const map: Record<string, string> = {};
  const entries = (typeof text === 'string' ? [text] : text).flatMap((t) => mapEntries(t, 'name', (problem) => usageError('--map', problem)));
  for (const { text: part, field, value, quoted } of entries) {
    if (value === undefined || field === '' || (value === '' && !quoted)) {
      throw usageError('--map', `"${part}" is not <field>=<column>, e.g. street=Strasse (quote a column holding a comma: street="Strasse, Nr")`);
    }
    if (!allowed.includes(field)) {
      throw usageError('--map', `"${field}" is not a ${mode} field; use ${allowed.join(', ')}`);
    }
    if (map[field] !== undefined) throw usageError('--map', `field "${field}" is mapped twice`);
    map[field] = value;
  }
  if (Object.keys(map).length === 0) throw usageError('--map', 'no field is mapped');
  return map;
}

/**
 * Without `--map`: for CSV each field of `mode` whose name equals a header column
 * (case and edge spaces aside; two such columns for one field are refused, as which one holds it is
 * not known); for JSON (no header) each field from the key of the same name. Columns
 * under a name that commonly holds a field (strasse, plz, ort, zip, city, …) are never mapped
 * unasked: with none named like a field the error shows the `--map` they suggest, and with some
 * fields left out `onHint` gets one line saying which columns look like them.
 */
export function inferFieldMap(mode: Mode, columns: readonly string[] | undefined, onHint?: (text: string) => void): FieldMap {
  if (columns === undefined) return Object.fromEntries(MODE_FIELDS[mode].map((f) => [f, f]));
  const map: Record<string, string> = {};
  const named = (field: string) => columns.filter((c) => c.trim().toLowerCase() === field.toLowerCase());
  for (const field of MODE_FIELDS[mode]) {
    const matches = named(field);
    if (matches.length > 1) {
      // `Locality` and `locality`, or a column named twice: which one holds the field is not known.
      const how =
        new Set(matches).size === matches.length
          ? `say which one it is, with every field (a --map replaces the columns found by name): --map ${MODE_FIELDS[mode]
              .filter((f) => f === field || named(f).length === 1)
              .map((f) => `${f}=${f === field ? '<column>' : mapName(named(f)[0]!)}`)
              .join(',')}, the column named exactly as in the header (${matches.map(mapName).join(' or ')})`
          : 'a column whose name is in the header twice cannot be mapped: rename one of the two';
      throw usageError(
        '--map',
        `the header has ${matches.length} columns named like the field ${field} (${matches.map((c) => JSON.stringify(c)).join(', ')}), case and edge spaces aside; ${how}`,
      );
    }
    if (matches.length === 1) map[field] = matches[0]!;
  }
  const mapped = Object.entries(map).map(([field, column]) => ({ field, column }));
  const lookalikes = unmappedLookalikes(mode, columns, mapped);
  if (mapped.length === 0) {
    const suggestion =
      lookalikes.length > 0
        ? `; the header has columns that look like them: check this mapping, then pass it: --map ${mapFlag(mode, lookalikes)}`
        : `; say which column holds what, e.g. --map street=Strasse,postalCode=PLZ${delimiterHint(columns)}`;
    throw usageError('--map', `no column is named like a field of ${mode} mode (${MODE_FIELDS[mode].join(', ')})${suggestion}`);
  }
  if (lookalikes.length > 0 && onHint) {
    onHint(autoMappingHint(mode, 'the header', mapped, lookalikes));
  }
  return map;
}

/** A column name as `--map` takes it: quoted (quotes doubled) when it holds a comma or a quote, or spaces at its ends. */
function mapName(name: string): string {
  return name === '' || name !== name.trim() || name.includes(',') || name.startsWith('"') ? `"${name.replace(/"/g, '""')}"` : name;
}

/**
 * A function turning a row into the engine's record. For CSV every mapped column must be in the
 * header exactly once; JSON rows are read by key (a missing key is an empty value).
 */
export function recordMapper(map: FieldMap, header: readonly string[] | undefined): (row: SourceRow) => EngineRecord {
  const entries = Object.entries(map);
  if (header) {
    const indexed = entries.map(([field, column]) => {
      const matches = header.flatMap((name, i) => (name === column ? [i] : []));
      if (matches.length !== 1) {
        const problem =
          matches.length === 0
            ? `is not in the header (${header.join(', ')})${spacedHint(header, field, column)}${delimiterHint(header)}`
            : 'appears more than once in the header';
        throw new CsvError('bad-mapping', `--map ${field}=${column}: column "${column}" ${problem}`);
      }
      return [field, matches[0] as number] as const;
    });
    return (row) => {
      const record: Record<string, string | undefined> = {};
      for (const [field, index] of indexed) record[field] = row.cells?.[index];
      return record;
    };
  }
  return (row) => {
    const record: Record<string, string | number | null | undefined> = {};
    // Own keys only: an inherited property (a key such as "__proto__" or "constructor") is no value of the row.
    for (const [field, key] of entries) record[field] = jsonScalar(row.object && Object.hasOwn(row.object, key) ? row.object[key] : undefined);
    return record;
  };
}

/**
 * A header column that is `column` but for spaces around it (which `--map` drops unless quoted):
 * say how to map it.
 */
function spacedHint(header: readonly string[], field: string, column: string): string {
  const spaced = header.find((name) => name !== column && name.trim() === column.trim());
  return spaced === undefined
    ? ''
    : `; the header has ${JSON.stringify(spaced)}, with spaces around it: quote it to map it, ${field}="${spaced.replace(/"/g, '""')}"`;
}

/**
 * A header read as one column that holds another common delimiter was split with the wrong one
 * (`--delimiter` left at its default `,` for a `;` file): say which to pass.
 */
function delimiterHint(header: readonly string[]): string {
  if (header.length !== 1) return '';
  const found = [';', '\t', '|', ','].find((d) => header[0]!.includes(d));
  if (found === undefined) return '';
  return `; the header was read as one column: if the file is separated by ${found === '\t' ? 'tabs' : `'${found}'`}, pass --delimiter ${found === '\t' ? "'\\t'" : `'${found}'`}`;
}

function jsonScalar(value: unknown): string | number | null | undefined {
  if (value === null || value === undefined) return value;
  if (typeof value === 'string' || typeof value === 'number') return value;
  if (typeof value === 'boolean' || value instanceof JsonNumber) return String(value);
  return stringifyJson(value);
}
