import type pg from 'pg';
import { MODE_FIELDS } from '@dq/core/engine';
import { RECORD_STATUSES } from '@dq/core/schemas';
import type { Mode } from '@dq/core';
import { quoteIdent } from './db.js';
import { CleanseError, usageError } from './errors.js';

/** One request field read from, and written back to, one column. */
export interface MappedColumn {
  /** Request field of the mode, e.g. `postalCode`. */
  field: string;
  /** Column name as stored in the catalog. */
  column: string;
  /** The column quoted for SQL. */
  quoted: string;
  /** SQL type as `format_type` spells it, e.g. `character(5)`; old values are cast to it when compared. */
  type: string;
  /**
   * Characters the column holds (`varchar(n)`, `char(n)`, also through a domain); absent: no limit.
   * A correction longer than that is not written (see `decideRow`).
   */
  maxLength?: number;
  /**
   * A `char(n)` column (also through a domain): it pads values with spaces and compares them
   * without trailing spaces, so `'2700 '` read and `'2700'` answered are the same value.
   */
  padded?: boolean;
  /**
   * Bytes the column holds: a `name` column (also through a domain), which PostgreSQL cuts to 63
   * bytes without an error. A correction longer than that is not written (see `decideRow`).
   */
  maxBytes?: number;
}

/** Bytes a `name` value holds (NAMEDATALEN - 1); PostgreSQL cuts a longer one without an error. */
const NAME_BYTES = 63;

/** What a status column of the table holds (`--status-columns`). */
export type StatusField = 'status' | 'class' | 'requestId' | 'checkedAt';
export const STATUS_FIELDS: readonly StatusField[] = ['status', 'class', 'requestId', 'checkedAt'];

/**
 * Characters a text status column needs for each value it may get: the longest status
 * (`unsupported-country`), a class letter, a check time as PostgreSQL writes a timestamptz as text
 * (`2026-11-24 20:51:42.123456+05:30`).
 */
const STATUS_LENGTH: Partial<Record<StatusField, number>> = {
  status: Math.max(...RECORD_STATUSES.map((s) => s.length)),
  class: 1,
  checkedAt: 32,
};

/** Results some rows have none of: their status column gets NULL. */
const NULLABLE_STATUS: readonly StatusField[] = ['class', 'requestId'];

/** A column of the table that receives one of the row's results. */
export interface StatusColumn {
  field: StatusField;
  column: string;
  quoted: string;
  /** SQL type as `format_type` spells it; the audited old value is cast back to it. */
  type: string;
  /** Characters a text status column holds (`varchar(n)`, `char(n)`, also through a domain); absent: no limit. */
  maxLength?: number;
}

/** A table checked against the catalog: everything the reader and the writer need. */
export interface TargetTable {
  schema: string;
  table: string;
  /** `"schema"."table"`, quoted. */
  qualified: string;
  key: {
    column: string;
    quoted: string;
    /** SQL type as `format_type` spells it (e.g. `bigint`, `character varying(20)`), used in casts. */
    type: string;
  };
  columns: MappedColumn[];
  /** Columns that receive each row's status, class, request id and checked-at; empty: results go to the side table only. */
  status: StatusColumn[];
  /** Every column of the table, in table order (for mapping hints). */
  columnNames?: string[];
}

/** What to check: names as the user gave them. */
export interface TableSpec {
  /** `table` or `schema.table`; unquoted names match exactly first, then case-insensitively. */
  table: string;
  /** Key column; default the single-column primary key. */
  key?: string;
  /** Request field → column; default every field of the mode with a column of that name (or snake_case). */
  map?: Readonly<Record<string, string>>;
  mode: Mode;
  /** Extra SQL predicate the rows must match. */
  where?: string;
  /** Whether UPDATE will be needed (false for --dry-run). */
  write: boolean;
  /** Result → column of the table that receives it on every row of the run. */
  statusColumns?: Readonly<Partial<Record<StatusField, string>>>;
}

interface ColumnRow {
  name: string;
  type: string;
  category: string;
  notnull: boolean;
  generated: string;
  /** Declared length of a varchar(n)/char(n) column (or domain over one); null: unbounded. */
  max_length?: number | null;
  /** The column's type is a domain declared NOT NULL. */
  domain_notnull?: boolean;
  /** The column is `char(n)` (bpchar), also through a domain. */
  padded?: boolean;
  /** The column is of type `name` (also through a domain): 63 bytes, longer values cut without an error. */
  is_name?: boolean;
}

/**
 * The pre-flight checks, all before any API call: the table and columns exist, the key has
 * a single-column unique index (or is the primary key) and no NULLs, mapped columns are text-like
 * (type category S, domains resolved) and not generated, the `where` predicate parses, and the user
 * may read (and, unless dry-run, update) the table. Each failure is a {@link CleanseError} naming
 * the table or column and what to do.
 */
export async function inspectTable(client: pg.Client, spec: TableSpec): Promise<TargetTable> {
  const { oid, schema, table } = await findTable(client, spec.table);
  const qualified = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  // A column's type through every level of domains (a domain over a domain over char(5), say): its
  // base type, the declared length of the innermost domain that has one, NOT NULL on any of them.
  const { rows: columns } = await client.query<ColumnRow>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
            d.category, a.attnotnull AS notnull, a.attgenerated AS generated,
            d.notnull AS domain_notnull, d.base = 'pg_catalog.bpchar'::regtype AS padded,
            d.base = 'pg_catalog.name'::regtype AS is_name,
            CASE WHEN d.base IN ('pg_catalog.varchar'::regtype, 'pg_catalog.bpchar'::regtype) AND COALESCE(d.typmod, a.atttypmod) >= 4
                 THEN COALESCE(d.typmod, a.atttypmod) - 4 END AS max_length
       FROM pg_attribute a
       CROSS JOIN LATERAL (
         WITH RECURSIVE chain AS (
           SELECT ty.oid, ty.typtype, ty.typcategory, ty.typbasetype, ty.typtypmod, ty.typnotnull, 0 AS depth FROM pg_type ty WHERE ty.oid = a.atttypid
           UNION ALL
           SELECT b.oid, b.typtype, b.typcategory, b.typbasetype, b.typtypmod, b.typnotnull, c.depth + 1
             FROM chain c JOIN pg_type b ON c.typtype = 'd' AND b.oid = c.typbasetype)
         SELECT (SELECT oid FROM chain WHERE typtype <> 'd' LIMIT 1) AS base,
                (SELECT typcategory FROM chain WHERE typtype <> 'd' LIMIT 1) AS category,
                (SELECT typtypmod FROM chain WHERE typtype = 'd' AND typtypmod >= 0 ORDER BY depth LIMIT 1) AS typmod,
                COALESCE((SELECT bool_or(typnotnull) FROM chain WHERE typtype = 'd'), false) AS notnull) d
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [oid],
  );
  const names = columns.map((c) => c.name);
  const column = (wanted: string, what: string): ColumnRow => {
    const name = resolveName(names, wanted);
    const found = columns.find((c) => c.name === name);
    if (!found) {
      throw new CleanseError('column-not-found', `${what}: table ${qualified} has no column "${wanted}"; its columns are ${names.join(', ')}`);
    }
    return found;
  };

  const keyRow = spec.key === undefined ? await primaryKeyColumn(client, oid, qualified) : column(spec.key, '--key');
  const unique = await client.query(
    `SELECT 1 FROM pg_index i
      WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1 AND i.indpred IS NULL
        AND i.indexprs IS NULL AND i.indkey[0] = (SELECT attnum FROM pg_attribute WHERE attrelid = $1 AND attname = $2)`,
    [oid, keyRow.name],
  );
  if (unique.rowCount === 0) {
    // A partitioned table's unique indexes must include its partition key, so "add a unique index"
    // on another column is no advice there: its partitions are tables of their own.
    const partitioned = await client.query<{ key: string }>(
      `SELECT pg_get_partkeydef(p.partrelid) AS key FROM pg_partitioned_table p
        WHERE p.partrelid = $1 AND (p.partexprs IS NOT NULL OR NOT (p.partattrs::int2[] <@ ARRAY(SELECT attnum FROM pg_attribute WHERE attrelid = $1 AND attname = $2)))`,
      [oid, keyRow.name],
    );
    const partKey = partitioned.rows[0]?.key;
    const advice =
      partKey === undefined
        ? 'Pick a unique column or add a unique index'
        : `${qualified} is partitioned (${partKey}), and PostgreSQL takes no unique index on it that leaves out the partition key. Clean each partition on its own (--table <partition> --key ${quoteIdent(keyRow.name)}, with a unique index on ${quoteIdent(keyRow.name)} in each partition); a row whose correction belongs in another partition is then refused and named (write-refused), not moved`;
    throw new CleanseError(
      'key-not-unique',
      `--key: column "${keyRow.name}" of ${qualified} has no primary key or single-column unique index; rows could not be addressed one by one. ${advice}`,
    );
  }
  await refuseKeyType(client, oid, keyRow.name, keyRow.type, qualified);
  const key = { column: keyRow.name, quoted: quoteIdent(keyRow.name), type: keyRow.type };
  if (!keyRow.notnull) {
    const nulls = await client.query(`SELECT 1 FROM ${qualified} WHERE ${key.quoted} IS NULL LIMIT 1`);
    if ((nulls.rowCount ?? 0) > 0) {
      throw new CleanseError(
        'key-has-nulls',
        `--key: column "${keyRow.name}" of ${qualified} holds NULLs; those rows cannot be addressed. Fill them or pick another key`,
      );
    }
  }

  const mapped = mapColumns(spec, names, qualified).map(({ field, column: wanted }): MappedColumn => {
    const row = column(wanted, `--map ${field}`);
    if (row.name === key.column) throw new CleanseError('column-type', `--map ${field}: "${row.name}" is the key column; the key is never rewritten`);
    if (row.category !== 'S') {
      throw new CleanseError(
        'column-type',
        `--map ${field}: column "${row.name}" of ${qualified} is ${row.type}, not a text type (text, varchar, char)${row.category === 'N' && field === 'postalCode' ? numericPostalCode(row.name, qualified) : '; map a text column'}`,
      );
    }
    if (row.generated !== '') throw new CleanseError('column-type', `--map ${field}: column "${row.name}" of ${qualified} is generated and cannot be written`);
    return {
      field,
      column: row.name,
      quoted: quoteIdent(row.name),
      type: row.type,
      ...(typeof row.max_length === 'number' ? { maxLength: row.max_length } : {}),
      ...(row.padded ? { padded: true } : {}),
      ...(row.is_name === true ? { maxBytes: NAME_BYTES } : {}),
    };
  });
  const seen = new Set<string>();
  for (const m of mapped) {
    if (seen.has(m.column)) throw usageError('--map', `column "${m.column}" is mapped to more than one field`);
    seen.add(m.column);
  }

  // In STATUS_FIELDS order, whatever the flag's order: the run's audit arrays follow it.
  const statusEntries = Object.entries(spec.statusColumns ?? {}).sort(
    ([a], [b]) => STATUS_FIELDS.indexOf(a as StatusField) - STATUS_FIELDS.indexOf(b as StatusField),
  );
  const status = statusEntries.map(([field, wanted]): StatusColumn => {
    if (!STATUS_FIELDS.includes(field as StatusField)) throw usageError('--status-columns', `unknown result "${field}"; use ${STATUS_FIELDS.join(', ')}`);
    const row = column(wanted as string, `--status-columns ${field}`);
    if (row.name === key.column || seen.has(row.name)) {
      throw new CleanseError('column-type', `--status-columns ${field}: "${row.name}" is the key or a mapped column; name a column of its own`);
    }
    // Text takes every value; checked-at may also be a timestamp column.
    const fits = row.category === 'S' || (field === 'checkedAt' && /^timestamp/.test(row.type));
    if (!fits) {
      throw new CleanseError(
        'column-type',
        `--status-columns ${field}: column "${row.name}" of ${qualified} is ${row.type}; use a text column${field === 'checkedAt' ? ' or a timestamp' : ''}`,
      );
    }
    if (row.generated !== '')
      throw new CleanseError('column-type', `--status-columns ${field}: column "${row.name}" of ${qualified} is generated and cannot be written`);
    // A declared length every value of the result must fit, checked now rather than by a page's
    // UPDATE failing after its calls were paid (a request id's length is the platform's: not checked).
    const needed = STATUS_LENGTH[field as StatusField];
    if (needed !== undefined && typeof row.max_length === 'number' && row.max_length < needed && !/^timestamp/.test(row.type)) {
      throw new CleanseError(
        'column-type',
        `--status-columns ${field}: column "${row.name}" of ${qualified} is ${row.type}, too short for every ${field} value (${needed} characters needed); widen it or use text`,
      );
    }
    // A row without a class or request id (refused by the local checks, an unsupported country)
    // writes NULL there: a NOT NULL column would refuse every such row's update, and the page with it.
    if (NULLABLE_STATUS.includes(field as StatusField) && (row.notnull || row.domain_notnull === true)) {
      const fix = row.notnull
        ? `allow NULL first: ALTER TABLE ${qualified} ALTER COLUMN ${quoteIdent(row.name)} DROP NOT NULL`
        : `its type ${row.type} is a domain declared NOT NULL; use a type that allows NULL`;
      throw new CleanseError(
        'column-type',
        `--status-columns ${field}: column "${row.name}" of ${qualified} is NOT NULL, but rows without a ${field === 'class' ? 'result class' : 'request id'} (invalid-input, unsupported-country) get NULL there; ${fix}`,
      );
    }
    seen.add(row.name);
    return {
      field: field as StatusField,
      column: row.name,
      quoted: quoteIdent(row.name),
      type: row.type,
      ...(typeof row.max_length === 'number' && row.category === 'S' ? { maxLength: row.max_length } : {}),
    };
  });

  await refuseTableShape(client, oid, qualified, spec.write);
  await checkPrivileges(client, oid, qualified, spec.write, {
    read: [key.column, ...mapped.map((m) => m.column), ...status.map((s) => s.column)],
    written: [...mapped.map((m) => m.column), ...status.map((s) => s.column)],
  });
  if (spec.where !== undefined) {
    try {
      // The extended protocol takes one statement only: a predicate that closes the parenthesis
      // and appends another statement is refused here, not run (even with --dry-run).
      await client.query({ text: `EXPLAIN SELECT 1 FROM ${qualified} WHERE (${spec.where})`, queryMode: 'extended' } as pg.QueryConfig);
    } catch (e) {
      throw new CleanseError('where-invalid', `--where: the predicate is not valid for ${qualified}: ${(e as Error).message}`, { cause: e });
    }
  }
  return { schema, table, qualified, key, columns: mapped, status, columnNames: names };
}

/**
 * What the refusal of a number column mapped as the postal code adds: a number keeps no leading
 * zeros, so the codes that have them are already cut, and how to make the column text again (or
 * map another).
 */
function numericPostalCode(column: string, qualified: string): string {
  const quoted = quoteIdent(column);
  return `: a number keeps no leading zeros, so postal codes such as 01067 (Dresden) are already stored without them (1067). Make it text, padded to the length of the country's postal codes (5 in Germany): ALTER TABLE ${qualified} ALTER COLUMN ${quoted} TYPE text USING lpad(${quoted}::bigint::text, 5, '0'), or map a text column`;
}

/**
 * Refuses a key of a type the page write cannot hand over as one array of keys (`unnest($keys::type[])`,
 * README "What a run does"): an array (an array of arrays is one array of their elements) or a
 * composite type (unnest spreads its fields over columns), also through a domain. Checked before any
 * call: such a run would otherwise pay for its first pages and then fail writing them.
 */
async function refuseKeyType(client: pg.Client, oid: number, column: string, type: string, qualified: string): Promise<void> {
  const { rows } = await client.query<{ typtype: string; category: string }>(
    `WITH RECURSIVE t AS (
       SELECT ty.oid, ty.typtype, ty.typcategory, ty.typbasetype FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid
        WHERE a.attrelid = $1 AND a.attname = $2
       UNION ALL
       SELECT b.oid, b.typtype, b.typcategory, b.typbasetype FROM t JOIN pg_type b ON t.typtype = 'd' AND b.oid = t.typbasetype)
     SELECT typtype::text AS typtype, typcategory::text AS category FROM t WHERE typtype <> 'd'`,
    [oid, column],
  );
  const base = rows[0];
  if (!base || (base.typtype !== 'c' && base.category !== 'A')) return;
  throw new CleanseError(
    'column-type',
    `--key: column "${column}" of ${qualified} is ${type}, ${base.typtype === 'c' ? 'a composite type' : 'an array'}: dq-pg addresses rows by a key of a single value (a number, text, uuid, date, …). Pick such a unique column with --key, or add one: ALTER TABLE ${qualified} ADD COLUMN dq_id bigint GENERATED BY DEFAULT AS IDENTITY UNIQUE`,
  );
}

async function findTable(client: pg.Client, given: string): Promise<{ oid: number; schema: string; table: string }> {
  const parts = splitQualified(given);
  if (!parts) throw usageError('--table', `"${given}" is not a table name (table or schema.table)`);
  const { rows } = await client.query<{ oid: number; schema: string; table: string }>(
    `SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS table
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND lower(c.relname) = lower($2)
        AND (CASE WHEN $1::text IS NULL THEN n.nspname = ANY (current_schemas(false)) ELSE lower(n.nspname) = lower($1) END)
      ORDER BY array_position(current_schemas(false)::text[], n.nspname::text)`,
    [parts.schema ?? null, parts.table],
  );
  const exact = rows.filter((r) => r.table === parts.table && (parts.schema === undefined || r.schema === parts.schema));
  const pick = exact[0] ?? (rows.length === 1 ? rows[0] : undefined);
  if (!pick && rows.length === 0) await refuseNonTable(client, given, parts);
  if (!pick) {
    const hint =
      rows.length > 1
        ? `several tables match ignoring case (${rows.map((r) => `${r.schema}.${r.table}`).join(', ')}); spell it exactly`
        : 'check the name and the search_path, or give schema.table';
    throw new CleanseError('table-not-found', `--table: no table "${given}" in this database; ${hint}`);
  }
  return pick;
}

/** What a relation that is not a table is, for the refusal of it. */
const RELATION_KINDS: Readonly<Record<string, string>> = {
  v: 'a view',
  m: 'a materialized view',
  f: 'a foreign table',
  S: 'a sequence',
  i: 'an index',
  I: 'an index',
  c: 'a composite type',
  t: 'a TOAST table',
};

/**
 * `--table` names no table but a relation of another kind (a view, a materialized view, a foreign
 * table, …), found as {@link findTable} finds a table: refused (`table-unsupported`), saying what it
 * is and what to clean instead. dq-pg's guarded page writes, key ranges, audit and rollback address
 * the rows of a table by its unique key index, which a view has none of; a view's rows are those of
 * the tables it reads, which are named. Nothing of the kind found: returns, the caller says "no table".
 */
async function refuseNonTable(client: pg.Client, given: string, parts: { schema?: string; table: string }): Promise<void> {
  const { rows } = await client.query<{ kind: string; qualified: string; sources: string[] }>(
    `SELECT c.relkind::text AS kind, format('%I.%I', n.nspname, c.relname) AS qualified,
            ARRAY(SELECT DISTINCT format('%I.%I', sn.nspname, s.relname)
                    FROM pg_rewrite r
                    JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
                    JOIN pg_class s ON s.oid = d.refobjid AND s.oid <> c.oid AND s.relkind IN ('r', 'p', 'v', 'm', 'f')
                    JOIN pg_namespace sn ON sn.oid = s.relnamespace
                   WHERE r.ev_class = c.oid ORDER BY 1) AS sources
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind NOT IN ('r', 'p') AND lower(c.relname) = lower($2)
        AND (CASE WHEN $1::text IS NULL THEN n.nspname = ANY (current_schemas(false)) ELSE lower(n.nspname) = lower($1) END)
      ORDER BY c.relname = $2 AND ($1::text IS NULL OR n.nspname = $1) DESC, array_position(current_schemas(false)::text[], n.nspname::text)
      LIMIT 1`,
    [parts.schema ?? null, parts.table],
  );
  const found = rows[0];
  if (!found) return;
  const what = RELATION_KINDS[found.kind] ?? `a relation of kind ${found.kind}`;
  const from = found.sources.length > 0 ? ` (it reads ${found.sources.join(', ')})` : '';
  const instead =
    found.kind === 'v' || found.kind === 'm'
      ? `give --table the table that stores the values${from}${found.kind === 'm' ? ', then REFRESH MATERIALIZED VIEW ' + found.qualified : ''}`
      : found.kind === 'f'
        ? 'clean the table on the server it is stored on'
        : 'give --table a table';
  throw new CleanseError(
    'table-unsupported',
    `--table: "${given}" is ${found.qualified}, ${what}, not a table; dq-pg cleans the rows of a table in place, addressed by its unique key: ${instead}`,
  );
}

/** `a.b`, `"A.x".b`, `a` → parts; quotes allow dots and doubled quotes inside a name. */
export function splitQualified(text: string): { schema?: string; table: string } | undefined {
  const part = String.raw`("(?:[^"]|"")+"|[^."]+)`;
  const m = new RegExp(`^${part}(?:\\.${part})?$`).exec(text.trim());
  if (!m || m[1] === undefined) return undefined;
  const unquote = (s: string): string => (s.startsWith('"') ? s.slice(1, -1).replace(/""/g, '"') : s);
  return m[2] === undefined ? { table: unquote(m[1]) } : { schema: unquote(m[1]), table: unquote(m[2]) };
}

async function primaryKeyColumn(client: pg.Client, oid: number, qualified: string): Promise<ColumnRow> {
  const { rows } = await client.query<ColumnRow>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, ''::text AS category, a.attnotnull AS notnull, ''::text AS generated
       FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
      WHERE i.indrelid = $1 AND i.indisprimary`,
    [oid],
  );
  const first = rows[0];
  if (rows.length !== 1 || !first) {
    throw usageError('--key', `${qualified} has ${rows.length === 0 ? 'no primary key' : 'a primary key of several columns'}; name a unique column with --key`);
  }
  return first;
}

function resolveName(names: readonly string[], wanted: string): string | undefined {
  if (names.includes(wanted)) return wanted;
  // Quoted as SQL quotes it ("Street Name", "say ""hi"""): that name exactly.
  const quoted = /^"((?:[^"]|"")+)"$/.exec(wanted);
  if (quoted?.[1] !== undefined) {
    const name = quoted[1].replace(/""/g, '"');
    return names.includes(name) ? name : undefined;
  }
  const folded = names.filter((n) => n.toLowerCase() === wanted.toLowerCase());
  return folded.length === 1 ? folded[0] : undefined;
}

function mapColumns(spec: TableSpec, names: readonly string[], qualified: string): { field: string; column: string }[] {
  const fields: readonly string[] = MODE_FIELDS[spec.mode];
  if (spec.map !== undefined) {
    const entries = Object.entries(spec.map);
    if (entries.length === 0) throw usageError('--map', 'maps no field');
    for (const [field] of entries) {
      if (!fields.includes(field)) throw usageError('--map', `"${field}" is not a ${spec.mode} field; use ${fields.join(', ')}`);
    }
    return entries.map(([field, column]) => ({ field, column }));
  }
  const found = fields.flatMap((field) => {
    const snake = field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const column = resolveName(names, field) ?? resolveName(names, snake);
    return column === undefined ? [] : [{ field, column }];
  });
  if (found.length === 0)
    throw usageError('--map', `no column of ${qualified} is named like a ${spec.mode} field (${fields.join(', ')}); give --map field=column,...`);
  return found;
}

/**
 * Tables dq-pg's statements cannot handle, refused before any call:
 *
 * - Inheritance children (not the partitions of a partitioned table): a read or UPDATE of the parent
 *   includes its children, whose rows the key's unique index (on the parent only) does not cover, so
 *   one key could stand for two rows of a page, and the key ranges would skip rows of the children.
 * - (when writing) A rule on UPDATE: PostgreSQL takes no UPDATE inside WITH on such a table, and
 *   every page write is one.
 * - (when writing) A table, or a partition of it, that a publication publishes UPDATEs of and that
 *   has no replica identity (no primary key and REPLICA IDENTITY DEFAULT, or NOTHING): PostgreSQL
 *   refuses every UPDATE of it.
 */
async function refuseTableShape(client: pg.Client, oid: number, qualified: string, write: boolean): Promise<void> {
  const children = await client.query<{ child: string }>(
    `SELECT i.inhrelid::regclass::text AS child FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
      WHERE i.inhparent = $1 AND p.relkind = 'r' ORDER BY 1`,
    [oid],
  );
  if (children.rows.length > 0) {
    const names = children.rows.map((r) => r.child);
    throw new CleanseError(
      'table-unsupported',
      `${qualified} has inheritance children (${names.slice(0, 10).join(', ')}${names.length > 10 ? `, … ${names.length} in all` : ''}), whose rows a read or UPDATE of it includes while its key's unique index covers its own rows only; clean each table on its own: --table ${qualified} cannot be cleaned with its children (declarative partitioning works: PARTITION BY)`,
    );
  }
  if (!write) return;
  const rules = await client.query<{ rule: string }>(`SELECT rulename::text AS rule FROM pg_rewrite WHERE ev_class = $1 AND ev_type = '2' ORDER BY 1`, [oid]);
  if (rules.rows.length > 0) {
    throw new CleanseError(
      'table-unsupported',
      `${qualified} has a rule on UPDATE (${rules.rows.map((r) => r.rule).join(', ')}); dq-pg writes each page with an UPDATE inside WITH, which PostgreSQL refuses on a table with such rules. Replace the rule with a trigger (or drop it), then run again`,
    );
  }
  const unidentified = await client.query<{ rel: string; own: boolean; pubs: string[] }>(
    `WITH leaves AS (
       SELECT $1::oid AS relid WHERE NOT EXISTS (SELECT 1 FROM pg_partition_tree($1::oid::regclass))
       UNION SELECT relid FROM pg_partition_tree($1::oid::regclass) WHERE isleaf)
     SELECT l.relid::regclass::text AS rel, l.relid = $1::oid AS own,
            ARRAY(SELECT DISTINCT pt.pubname::text FROM pg_publication_tables pt JOIN pg_publication p ON p.pubname = pt.pubname
                   WHERE p.pubupdate AND (pt.schemaname, pt.tablename) IN (
                     SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE c.oid = l.relid OR c.oid IN (SELECT relid FROM pg_partition_ancestors(l.relid)))
                   ORDER BY 1) AS pubs
       FROM leaves l JOIN pg_class r ON r.oid = l.relid
      WHERE r.relreplident = 'n'
         OR (r.relreplident = 'd' AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = r.oid AND i.indisprimary))
      ORDER BY 1`,
    [oid],
  );
  const published = unidentified.rows.find((r) => r.pubs.length > 0);
  if (published) {
    throw new CleanseError(
      'table-unsupported',
      `${published.own ? qualified : `${published.rel} (a partition of ${qualified})`} is in publication ${published.pubs.join(', ')}, which publishes UPDATEs, and has no replica identity (no primary key, or REPLICA IDENTITY NOTHING): PostgreSQL refuses every UPDATE of it. Give it one (ALTER TABLE ${published.rel} REPLICA IDENTITY USING INDEX <a unique index on NOT NULL columns>, or REPLICA IDENTITY FULL), or leave it out of the publication, then run again`,
    );
  }
}

/**
 * The user may read (and, when writing, update) the table: on the whole table, or failing that on
 * each column dq-pg reads (`read`: the key, the mapped and status columns) and writes (`written`),
 * as column-level grants allow.
 */
async function checkPrivileges(
  client: pg.Client,
  oid: number,
  qualified: string,
  write: boolean,
  columns: { read: readonly string[]; written: readonly string[] },
): Promise<void> {
  const { rows } = await client.query<{ sel: boolean; upd: boolean; no_sel: string[]; no_upd: string[] }>(
    `SELECT has_table_privilege($1::oid, 'SELECT') AS sel, has_table_privilege($1::oid, 'UPDATE') AS upd,
            ARRAY(SELECT c FROM unnest($2::text[]) c WHERE NOT has_column_privilege($1::oid, c, 'SELECT')) AS no_sel,
            ARRAY(SELECT c FROM unnest($3::text[]) c WHERE NOT has_column_privilege($1::oid, c, 'UPDATE')) AS no_upd`,
    [oid, columns.read, columns.written],
  );
  const p = rows[0];
  if (!p) throw new Error('the privilege check returned no row');
  const list = (names: readonly string[]): string => names.map(quoteIdent).join(', ');
  if (!p.sel && p.no_sel.length > 0) {
    throw new CleanseError(
      'permission-denied',
      `the database user may not SELECT column${p.no_sel.length > 1 ? 's' : ''} ${list(p.no_sel)} of ${qualified}; GRANT SELECT, UPDATE ON ${qualified} to it (or, column by column, SELECT (${list(columns.read)}) and UPDATE (${list(columns.written)}))`,
    );
  }
  if (write && !p.upd && p.no_upd.length > 0) {
    throw new CleanseError(
      'permission-denied',
      `the database user may not UPDATE column${p.no_upd.length > 1 ? 's' : ''} ${list(p.no_upd)} of ${qualified}; GRANT UPDATE ON ${qualified} to it (or UPDATE (${list(columns.written)})), or use --dry-run`,
    );
  }
}
