import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from '@dq/test-support/random';
import type { Rand } from '@dq/test-support/random';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, COLUMNS, createCustomers, resultRows, runCli, spawnCli, startEnv, summaryOf, withClient } from './support.js';
import type { CliResult, TestEnv } from './support.js';

// The key column and the session's settings (README "What a run does", "Keys are stored as their
// text form"): whatever the key's type and whatever the database or the role sets for how values
// print (TimeZone, DateStyle, IntervalStyle, extra_float_digits, bytea_output, …), a run reads
// every row once, writes each changed row once, pays each distinct input once, a kill -9 and the
// resume repay at most the pages in flight, a rerun with a new run id makes no call and no write,
// and the rollback restores exactly the rows the run changed — also when a setting changed between
// the run, its resume, the rerun and the rollback. The expected table is computed here: the same
// rows cleaned by their bigint primary key under default settings.

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
  // Slow answers keep pages in flight long enough to kill a run in the middle of one.
  env.sandbox.setFaults({ batch: { latencyMs: 15 } });
});
afterAll(async () => {
  await env?.stop();
});

const ROWS = 48;
const BATCH = 5;
const WORKERS = 3;
const RUN_FLAGS = ['--batch-size', String(BATCH), '--pages-per-claim', '2', '--workers', String(WORKERS)];

type Settings = Record<string, string>;

/** One key type: the column's type, SQL it needs first, and candidate key literals (duplicates under the type's equality are dropped). */
interface KeyType {
  name: string;
  type: string;
  setup?: string[];
  values: (r: Rand) => string[];
  /** Pre-flight refuses it (exit 2, no call), with this in its message. */
  refused?: string;
}

/** A case: a key type, the settings the run starts under, and the settings changed after the kill, before the rerun and before the rollback. */
interface KeyCase {
  key: KeyType;
  start?: Settings;
  /** ALTER ROLE … IN DATABASE … SET (over the database's). */
  role?: Settings;
  resume?: Settings;
  rerun?: Settings;
  rollback?: Settings;
  kill?: boolean;
}

const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** Float64 neighbours of `x` (one ulp up and down), as shortest round-trip literals. */
function neighbours(x: number): string[] {
  const b = new DataView(new ArrayBuffer(8));
  b.setFloat64(0, x);
  const bits = b.getBigUint64(0);
  const out: string[] = [];
  for (const d of [-1n, 1n]) {
    b.setBigUint64(0, bits + d);
    out.push(String(b.getFloat64(0)));
  }
  return out;
}

/** Float32 neighbours of `x`, printed with 9 significant digits (exact for a float4). */
function neighbours32(x: number): string[] {
  const b = new DataView(new ArrayBuffer(4));
  b.setFloat32(0, x);
  const bits = b.getUint32(0);
  const out: string[] = [];
  for (const d of [-1, 0, 1]) {
    b.setUint32(0, bits + d);
    out.push(b.getFloat32(0).toPrecision(9));
  }
  return out;
}

const many = (r: Rand, n: number, f: (r: Rand) => string): string[] => Array.from({ length: n }, () => f(r));
const digits = (r: Rand, n: number): string => Array.from({ length: n }, () => String(r.int(0, 9))).join('');
const hex = (r: Rand, n: number): string => Array.from({ length: n }, () => r.int(0, 255).toString(16).padStart(2, '0')).join('');
const TEXT_KEYS = [
  'a',
  'B',
  'b',
  'A',
  'ä',
  'Ä',
  '',
  ' ',
  '  ',
  'a ',
  'a  ',
  ' a',
  '😀',
  '😀a',
  'Z',
  'é',
  'e\u0301',
  'ß',
  'ss',
  'SS',
  'z',
  'ı',
  'İ',
  'i',
  'I',
  '"',
  '\\',
  ',',
  '{',
  '}',
  'NULL',
  'null',
  "'",
  'a,b',
  '{a}',
  '1',
  '10',
  '2',
  '-',
  '_',
  'Å',
  'Ω',
  '\u00a0',
  '\t',
  'x\ny',
  'ñ',
  'n\u0303',
  'ǅ',
];
function textKeys(r: Rand): string[] {
  const alphabet = ['a', 'A', 'b', 'B', 'ä', 'Ä', ' ', 'z', 'é', '😀', '_', '-', '1', 'ß', '"', '\\', ','];
  return [...TEXT_KEYS, ...many(r, 60, (q) => Array.from({ length: q.int(0, 5) }, () => q.pick(alphabet)).join(''))].map(lit);
}

const date = (r: Rand): string =>
  `${String(r.int(1, 9999)).padStart(4, '0')}-${String(r.int(1, 12)).padStart(2, '0')}-${String(r.int(1, 28)).padStart(2, '0')}`;
const time = (r: Rand): string =>
  `${String(r.int(0, 23)).padStart(2, '0')}:${String(r.int(0, 59)).padStart(2, '0')}:${String(r.int(0, 59)).padStart(2, '0')}${r.chance(0.5) ? `.${digits(r, r.int(1, 6))}` : ''}`;

const KEYS: Record<string, KeyType> = {
  smallint: { name: 'smallint', type: 'smallint', values: (r) => ['-32768', '32767', '0', '-1', '1', ...many(r, 60, (q) => String(q.int(-32768, 32767)))] },
  integer: {
    name: 'integer',
    type: 'integer',
    values: (r) => ['-2147483648', '2147483647', '0', '-1', ...many(r, 60, (q) => String(q.int(-2147483648, 2147483647)))],
  },
  bigint: {
    name: 'bigint',
    type: 'bigint',
    values: (r) => [
      '-9223372036854775808',
      '9223372036854775807',
      '0',
      '-1',
      '9007199254740993',
      '9007199254740992',
      ...many(r, 60, (q) => `${q.chance(0.5) ? '-' : ''}${digits(q, q.int(1, 18))}`),
    ],
  },
  numeric: {
    name: 'numeric',
    type: 'numeric',
    values: (r) => [
      "'NaN'",
      '1.0',
      '1.00',
      '1',
      '0.1',
      '0.10',
      '-0',
      '0',
      '0.000',
      '1e-30',
      '-1e-30',
      '123456789012345678901234567890.123456789012345678901234567890',
      '123456789012345678901234567890.123456789012345678901234567891',
      `1${'0'.repeat(300)}`,
      `0.${'0'.repeat(300)}1`,
      "'Infinity'",
      "'-Infinity'",
      ...many(r, 50, (q) => `${q.chance(0.3) ? '-' : ''}${digits(q, q.int(1, 20))}.${digits(q, q.int(0, 30))}`),
    ],
  },
  real: {
    name: 'real',
    type: 'real',
    values: (r) =>
      [
        "'NaN'",
        "'Infinity'",
        "'-Infinity'",
        "'-0'",
        '0',
        '1.4e-45',
        '-1.4e-45',
        '1.17549435e-38',
        '3.40282347e38',
        '0.1',
        '0.3',
        ...neighbours32(0.1),
        ...neighbours32(1 / 3),
        ...neighbours32(16777216),
        ...many(r, 40, (q) => (q() * 10 ** q.int(-40, 38) * (q.chance(0.3) ? -1 : 1)).toPrecision(9)),
      ].map((v) => (v.startsWith("'") ? v : `'${v}'`)),
  },
  double: {
    name: 'double precision',
    type: 'double precision',
    values: (r) =>
      [
        "'NaN'",
        "'Infinity'",
        "'-Infinity'",
        "'-0'",
        '0',
        '5e-324',
        '-5e-324',
        '2.2250738585072014e-308',
        '1.7976931348623157e308',
        '0.1',
        '0.3',
        '0.30000000000000004',
        ...neighbours(0.1),
        ...neighbours(1 / 3),
        ...neighbours(1e15),
        ...neighbours(123.456),
        ...neighbours(2 ** 53),
        ...many(r, 30, (q) => String(q() * 10 ** q.int(-300, 300) * (q.chance(0.3) ? -1 : 1))),
      ].map((v) => (v.startsWith("'") ? v : `'${v}'`)),
  },
  textDe: { name: 'text COLLATE "de-x-icu"', type: 'text COLLATE "de-x-icu"', values: textKeys },
  textCi: {
    name: 'text, case-insensitive ICU collation',
    type: 'text COLLATE dq_ci',
    setup: [`CREATE COLLATION dq_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`],
    values: textKeys,
  },
  varcharPosix: { name: 'varchar(12) COLLATE "POSIX"', type: 'varchar(12) COLLATE "POSIX"', values: textKeys },
  textCutf8: { name: 'text COLLATE "C.utf8"', type: 'text COLLATE "C.utf8"', values: textKeys },
  char: { name: 'char(4)', type: 'char(4)', values: textKeys },
  uuid: {
    name: 'uuid',
    type: 'uuid',
    values: (r) => ["'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", ...many(r, 60, (q) => lit(hex(q, 16)))],
  },
  date: {
    name: 'date',
    type: 'date',
    values: (r) => [
      "'infinity'",
      "'-infinity'",
      "'4713-01-01 BC'",
      "'0001-01-01 BC'",
      "'5874897-12-31'",
      "'2020-03-04'",
      "'2020-04-03'",
      "'2020-12-01'",
      "'2020-01-12'",
      ...many(r, 60, (q) => lit(`${date(q)}${q.chance(0.1) ? ' BC' : ''}`)),
    ],
  },
  timestamp: {
    name: 'timestamp',
    type: 'timestamp',
    values: (r) => [
      "'infinity'",
      "'-infinity'",
      "'4713-01-01 00:00:00 BC'",
      "'2020-03-04 01:02:03.000001'",
      "'2020-04-03 01:02:03'",
      "'294276-12-31 23:59:59.999999'",
      ...many(r, 60, (q) => lit(`${date(q)} ${time(q)}${q.chance(0.1) ? ' BC' : ''}`)),
    ],
  },
  timestamptz: {
    name: 'timestamptz',
    type: 'timestamptz',
    values: (r) => [
      "'infinity'",
      "'-infinity'",
      "'2020-03-04 01:02:03.000001+00'",
      "'2020-04-03 01:02:03+05:30'",
      "'1850-06-01 12:00:00+00'",
      "'1900-01-01 00:00:00+00'",
      "'2021-10-31 01:30:00+00'",
      "'2021-10-31 00:30:00+00'",
      "'2021-10-31 02:30:00+00'",
      "'0044-03-15 12:00:00+00 BC'",
      ...many(r, 60, (q) => lit(`${date(q)} ${time(q)}${q.pick(['+00', '-03:30', '+05:45', '+14', '-12'])}${q.chance(0.05) ? ' BC' : ''}`)),
    ],
  },
  bytea: {
    name: 'bytea',
    type: 'bytea',
    values: (r) =>
      [
        "'\\x'",
        "'\\x00'",
        "'\\x0000'",
        "'\\xff'",
        "'\\x5c'",
        "'\\x5c5c'",
        "'\\x27'",
        "'\\x22'",
        "'\\x7f80'",
        ...many(r, 60, (q) => lit(`\\x${hex(q, q.int(0, 6))}`)),
      ].map((v) => `${v}::bytea`),
  },
  boolean: { name: 'boolean', type: 'boolean', values: () => ['true', 'false'] },
  inet: {
    name: 'inet',
    type: 'inet',
    values: (r) => [
      "'10.0.0.1'",
      "'10.0.0.1/24'",
      "'10.0.0.0/24'",
      "'::1'",
      "'::ffff:1.2.3.4'",
      "'1.2.3.4'",
      "'192.168.0.0/16'",
      "'fe80::1/64'",
      ...many(r, 50, (q) => lit(`${q.int(0, 255)}.${q.int(0, 255)}.${q.int(0, 255)}.${q.int(0, 255)}/${q.int(8, 32)}`)),
    ],
  },
  cidr: {
    name: 'cidr',
    type: 'cidr',
    values: (r) => [
      "'10.0.0.0/8'",
      "'10.0.0.0/16'",
      "'10.0.0.0/24'",
      "'::/0'",
      "'2001:db8::/32'",
      ...many(r, 50, (q) => `set_masklen(${lit(`${q.int(0, 255)}.${q.int(0, 255)}.${q.int(0, 255)}.${q.int(0, 255)}`)}::inet, ${q.int(8, 32)})::cidr`),
    ],
  },
  enum: {
    name: 'an enum',
    type: 'dq_mood',
    setup: [
      `CREATE TYPE dq_mood AS ENUM (${Array.from({ length: 50 }, (_, i) => lit(['sad', 'ok', 'a b', 'Ünï', '"q"', 'x,y', 'NULL', '{}', ''][i] ?? `v${49 - i}`)).join(', ')})`,
    ],
    values: () => Array.from({ length: 50 }, (_, i) => `${lit(['sad', 'ok', 'a b', 'Ünï', '"q"', 'x,y', 'NULL', '{}', ''][i] ?? `v${49 - i}`)}::dq_mood`),
  },
  domain: {
    name: 'a domain over text',
    type: 'dq_code',
    setup: [`CREATE DOMAIN dq_code AS text COLLATE "de-x-icu" CHECK (VALUE <> 'forbidden')`],
    values: textKeys,
  },
  citext: { name: 'citext', type: 'citext', setup: ['CREATE EXTENSION IF NOT EXISTS citext'], values: textKeys },
  interval: {
    name: 'interval',
    type: 'interval',
    values: (r) => [
      "'1 day'",
      "'24 hours'",
      "'-1 days +02:03:04'",
      "'1 mon -1 day'",
      "'1 year 2 mons -3 days +04:05:06.000007'",
      "'-1 year -2 mons +3 days -04:05:06'",
      "'0'",
      "'-0.000001 s'",
      "'178000000 years'",
      ...many(r, 50, (q) =>
        lit(`${q.int(-20, 20)} years ${q.int(-11, 11)} mons ${q.int(-40, 40)} days ${q.int(-30, 30)}:${q.int(0, 59)}:${q.int(0, 59)}.${digits(q, 3)}`),
      ),
    ],
  },
  time: { name: 'time', type: 'time', values: (r) => ["'24:00:00'", "'00:00:00'", ...many(r, 60, (q) => lit(time(q)))] },
  timetz: {
    name: 'timetz',
    type: 'timetz',
    values: (r) => [
      "'12:00:00+00'",
      "'13:00:00+01'",
      "'24:00:00-15:59'",
      ...many(r, 60, (q) => lit(`${time(q)}${q.pick(['+00', '-03:30', '+05:45', '+14'])}`)),
    ],
  },
  intArray: {
    name: 'integer[]',
    type: 'integer[]',
    refused: '--key: column "k" of "public"."customers" is integer[], an array',
    values: (r) => [
      "'{}'",
      "'{1}'",
      "'{1,2}'",
      "'{2,1}'",
      "'{NULL}'",
      "'{1,NULL}'",
      "'{{1,2},{3,4}}'",
      "'[0:1]={1,2}'",
      ...many(r, 50, (q) => `'{${Array.from({ length: q.int(1, 4) }, () => q.int(-5, 5)).join(',')}}'`),
    ],
  },
  textArray: {
    name: 'text[]',
    type: 'text[]',
    refused: '--key: column "k" of "public"."customers" is text[], an array',
    values: (r) => [
      "'{}'",
      '\'{""}\'',
      "'{a}'",
      "'{A}'",
      '\'{"a,b"}\'',
      "'{a,b}'",
      '\'{"NULL"}\'',
      "'{NULL}'",
      '\'{"\\\\"}\'',
      ...many(r, 50, (q) => `ARRAY[${Array.from({ length: q.int(1, 3) }, () => lit(q.pick(TEXT_KEYS))).join(',')}]`),
    ],
  },
  composite: {
    name: 'a composite type',
    type: 'dq_pair',
    refused: '--key: column "k" of "public"."customers" is dq_pair, a composite type',
    setup: [`CREATE TYPE dq_pair AS (a integer, b text)`],
    values: (r) => [
      "ROW(1, 'x')::dq_pair",
      'ROW(1, NULL)::dq_pair',
      'ROW(NULL, NULL)::dq_pair',
      "ROW(1, '')::dq_pair",
      "ROW(1, ' ')::dq_pair",
      "ROW(2, '\"')::dq_pair",
      "ROW(2, ',')::dq_pair",
      "ROW(2, '()')::dq_pair",
      ...many(r, 50, (q) => `ROW(${q.int(-3, 3)}, ${lit(q.pick(TEXT_KEYS))})::dq_pair`),
    ],
  },
  range: {
    name: 'int4range',
    type: 'int4range',
    values: (r) => [
      "'empty'",
      "'[1,2)'",
      "'(,)'",
      "'[1,)'",
      "'(,5]'",
      ...many(r, 50, (q) => {
        const a = q.int(-50, 50);
        return `int4range(${a}, ${a + q.int(0, 9)}, ${lit(q.pick(['[)', '[]', '(]', '()']))})`;
      }),
    ],
  },
  jsonb: {
    name: 'jsonb',
    type: 'jsonb',
    values: (r) => [
      `'1'`,
      `'1.0'`,
      `'1.00'`,
      `'"a"'`,
      `'null'`,
      `'[]'`,
      `'{}'`,
      `'{"a":1}'`,
      `'{"a":1.0}'`,
      `'"\\u0000x"'`,
      `'1e400'`,
      `'-0'`,
      `'0'`,
      ...many(r, 50, (q) => lit(JSON.stringify({ [q.pick(TEXT_KEYS)]: q.int(-9, 9) }))),
    ],
  },
  money: {
    name: 'money',
    type: 'money',
    values: (r) => ["'-92233720368547758.08'", "'92233720368547758.07'", '0', ...many(r, 60, (q) => `${q.int(-1000000, 1000000)}.${digits(q, 2)}::money`)],
  },
};

/** Settings that change how keys print (and, for DateStyle's order, how they are read). */
const SETTING_CHOICES: Record<string, string[]> = {
  TimeZone: ['UTC', 'Asia/Kolkata', 'America/New_York', 'Europe/Amsterdam', 'Pacific/Chatham', 'Australia/Lord_Howe'],
  DateStyle: ['ISO, MDY', 'ISO, DMY', 'SQL, DMY', 'SQL, MDY', 'Postgres, DMY', 'Postgres, MDY', 'German', 'ISO, YMD'],
  IntervalStyle: ['postgres', 'sql_standard', 'iso_8601', 'postgres_verbose'],
  extra_float_digits: ['1', '0', '-15', '3', '-4'],
  bytea_output: ['hex', 'escape'],
  standard_conforming_strings: ['on', 'off'],
  lc_monetary: ['C', 'C.utf8', 'POSIX'],
};

function randomSettings(r: Rand, n: number): Settings {
  const out: Settings = {};
  for (const name of r.shuffle(Object.keys(SETTING_CHOICES)).slice(0, n)) out[name] = r.pick(SETTING_CHOICES[name]!);
  return out;
}

const dbName = (url: string): string => new URL(url).pathname.slice(1);
const userName = (url: string): string => new URL(url).username;

async function applySettings(db: string, settings: Settings | undefined, role = false): Promise<void> {
  if (!settings) return;
  await withClient(db, async (c) => {
    for (const [name, value] of Object.entries(settings)) {
      const target = role ? `ROLE ${userName(db)} IN DATABASE ${dbName(db)}` : `DATABASE ${dbName(db)}`;
      await c.query(`ALTER ${target} SET ${name} = ${lit(value)}`);
    }
  });
}

/** Every row by id: the key and the whole row as text, and the mapped columns, read under fixed settings (not the database's). */
async function state(db: string): Promise<Map<string, { row: string; mapped: string; rest: string }>> {
  return withClient(db, async (c) => {
    await c.query(`SET DateStyle = 'ISO, YMD'; SET TimeZone = 'UTC'; SET extra_float_digits = 3; SET bytea_output = 'hex'; SET IntervalStyle = 'postgres'`);
    const { rows } = await c.query<{ id: string; row: string; mapped: string; rest: string }>(
      `SELECT id::text AS id, c::text AS row, json_build_array(${COLUMNS.join(', ')})::text AS mapped, (to_jsonb(c) - $1::text[])::text AS rest FROM customers c ORDER BY id`,
      [COLUMNS],
    );
    return new Map(rows.map((r) => [r.id, { row: r.row, mapped: r.mapped, rest: r.rest }]));
  });
}

/** The table's rows with their ids and the update log (a trigger: one row per UPDATE of a row). */
async function makeTable(db: string, key: KeyType, seed: number): Promise<string[]> {
  await createCustomers(db, ROWS, seed);
  const r = seededRandom(seed);
  await withClient(db, async (c) => {
    for (const s of key.setup ?? []) await c.query(s);
    await c.query(`CREATE TABLE cand (k ${key.type})`);
    for (const v of key.values(r)) {
      try {
        await c.query(`INSERT INTO cand VALUES (${v})`);
      } catch {
        // A literal the type refuses (a random float out of range, a char(4) too long): not a key.
      }
    }
    await c.query(`ALTER TABLE customers ADD COLUMN k ${key.type}`);
    await c.query(
      `WITH d AS (SELECT k, row_number() OVER (ORDER BY md5(k::text || ${seed})) AS rn FROM (SELECT DISTINCT k FROM cand) x)
       UPDATE customers SET k = d.k FROM d WHERE d.rn = customers.id`,
    );
    await c.query(`DELETE FROM customers WHERE k IS NULL`);
    await c.query(`ALTER TABLE customers ALTER COLUMN k SET NOT NULL`);
    await c.query(`CREATE UNIQUE INDEX customers_k ON customers (k)`);
    await c.query(`DROP TABLE cand`);
    await c.query(`CREATE TABLE upd_log (id bigint, at timestamptz DEFAULT clock_timestamp())`);
    await c.query(`CREATE FUNCTION log_upd() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO upd_log (id) VALUES (NEW.id); RETURN NEW; END $$`);
    await c.query(`CREATE TRIGGER log_upd AFTER UPDATE ON customers FOR EACH ROW EXECUTE FUNCTION log_upd()`);
  });
  const { rows } = await withClient(db, (c) => c.query<{ id: string }>(`SELECT id::text AS id FROM customers ORDER BY id`));
  return rows.map((x) => x.id);
}

/** The reference: the same rows cleaned by their bigint primary key under default settings; memoized by seed and ids. */
const references = new Map<string, Promise<{ mapped: Map<string, string>; calls: number }>>();
function reference(seed: number, ids: readonly string[]): Promise<{ mapped: Map<string, string>; calls: number }> {
  const id = `${seed}:${ids.join(',')}`;
  let ref = references.get(id);
  if (!ref) {
    ref = (async () => {
      const db = await env.pg.createDatabase();
      await createCustomers(db, ROWS, seed);
      await withClient(db, (c) => c.query(`DELETE FROM customers WHERE NOT (id::text = ANY ($1::text[]))`, [ids]));
      const before = billable(env.sandbox);
      const run = await runCli(cleanseArgs(db, env.sandbox, ['--run-id', 'ref', ...RUN_FLAGS]));
      expect(run.code, run.stderr).toBe(0);
      const calls = billable(env.sandbox) - before;
      const s = await state(db);
      return { mapped: new Map([...s].map(([k, v]) => [k, v.mapped])), calls };
    })();
    references.set(id, ref);
  }
  return ref;
}

const keyArgs = (db: string, runId: string): string[] => [
  ...cleanseArgs(db, env.sandbox, ['--run-id', runId, ...RUN_FLAGS]).map((a, i, all) => (all[i - 1] === '--key' ? 'k' : a)),
];

async function updates(db: string): Promise<{ n: number; distinct: number }> {
  return withClient(
    db,
    async (c) => (await c.query<{ n: number; distinct: number }>(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS distinct FROM upd_log`)).rows[0]!,
  );
}

function describeCase(kc: KeyCase): string {
  const s = (x?: Settings): string => (x ? JSON.stringify(x) : '-');
  return `${kc.key.name}; start ${s(kc.start)}${kc.role ? ` role ${s(kc.role)}` : ''}${kc.kill ? ` kill; resume ${s(kc.resume)}` : ''}; rerun ${s(kc.rerun)}; rollback ${s(kc.rollback)}`;
}

const ok = (run: CliResult, what: string): void => {
  expect(run.stderr, what).not.toContain('this is a bug');
  expect(run.code, `${what}: ${run.stderr}`).toBe(0);
};

/**
 * One case end to end. Either pre-flight refuses the key (exit 2 naming the column, no call) or
 * every invariant of the brief holds, checked against the model, not against dq-pg's summary.
 */
async function runCase(kc: KeyCase, seed: number): Promise<void> {
  const label = describeCase(kc);
  const db = await env.pg.createDatabase();
  const ids = await makeTable(db, kc.key, seed);
  const ref = await reference(seed, ids);
  await applySettings(db, kc.start);
  await applySettings(db, kc.role, true);
  const before = await state(db);
  const changed = ids.filter((id) => before.get(id)?.mapped !== ref.mapped.get(id));

  const calls0 = billable(env.sandbox);
  let first: CliResult;
  let killedAt = 0;
  if (kc.kill) {
    const { child, done } = spawnCli(keyArgs(db, 'r1'));
    const end = Date.now() + 30_000;
    while ((await resultRows(db, 'r1')) < 2 * BATCH && child.exitCode === null && Date.now() < end) await sleep(10);
    child.kill('SIGKILL');
    first = await done;
    killedAt = await resultRows(db, 'r1');
    if (first.signal === 'SIGKILL') {
      await applySettings(db, kc.resume);
      first = await runCli(keyArgs(db, 'r1'));
    }
  } else {
    first = await runCli(keyArgs(db, 'r1'));
  }
  if (kc.key.refused !== undefined) {
    // Refused before any call, naming the column and what to do; the table untouched.
    expect(first.code, `${label}: ${first.stderr}`).toBe(2);
    expect(first.stderr, label).toContain(kc.key.refused);
    expect(first.stderr, label).toContain('GENERATED BY DEFAULT AS IDENTITY UNIQUE');
    expect(billable(env.sandbox) - calls0, label).toBe(0);
    expect(await state(db), label).toEqual(before);
    expect(await resultRows(db, 'r1'), label).toBe(0);
    return;
  }
  ok(first, `${label}: run`);
  const calls = billable(env.sandbox) - calls0;
  if (kc.kill) {
    expect(calls, `${label}: calls`).toBeGreaterThanOrEqual(ref.calls);
    expect(calls, `${label}: calls`).toBeLessThanOrEqual(ref.calls + 2 * WORKERS * BATCH);
  } else expect(calls, `${label}: calls`).toBe(ref.calls);

  // The table: each row's mapped columns are the reference's, every other column as it was.
  const after = await state(db);
  for (const id of ids) {
    const b = before.get(id)!;
    const a = after.get(id)!;
    expect(a.mapped, `${label}: row ${id} mapped`).toBe(ref.mapped.get(id));
    // Columns not mapped (the id, the key) byte-exact; an unchanged row entirely.
    expect(a.rest, `${label}: row ${id} unmapped columns`).toBe(b.rest);
    if (b.mapped === a.mapped) expect(a.row, `${label}: row ${id}`).toBe(b.row);
  }
  // Each changed row updated exactly once; every row has exactly one results row, which names it.
  const u1 = await updates(db);
  expect(u1, `${label}: updates`).toEqual({ n: changed.length, distinct: changed.length });
  await withClient(db, async (c) => {
    const { rows } = await c.query<{ n: number; keys: number; rows: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT row_key)::int AS keys,
              (SELECT count(DISTINCT c.id)::int FROM dq_cleanse.results r JOIN customers c ON c.k = (r.row_key COLLATE "default")::${kc.key.type.replace(/ COLLATE .*/, '')} WHERE r.run_id = 'r1') AS rows
         FROM dq_cleanse.results WHERE run_id = 'r1'`,
    );
    expect(rows[0], `${label}: results rows`).toEqual({ n: ids.length, keys: ids.length, rows: ids.length });
    // Read once in all, across the kill and the resume: the killed process's committed pages are not read again.
    const progress = await c.query<{ n: number; pending: number }>(
      `SELECT sum(rows_read)::int AS n, count(*) FILTER (WHERE NOT done)::int AS pending FROM dq_cleanse.progress WHERE run_id = 'r1'`,
    );
    expect(progress.rows[0], `${label}: progress (${killedAt} rows committed at the kill)`).toEqual({ n: ids.length, pending: 0 });
    const audit = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'r1' AND before IS NOT NULL`);
    expect(audit.rows[0]?.n, `${label}: audited rows`).toBe(changed.length);
  });

  // A rerun with a new run id over the unchanged table: no call, no write.
  await applySettings(db, kc.rerun);
  const calls1 = billable(env.sandbox);
  const rerun = await runCli(keyArgs(db, 'r2'));
  ok(rerun, `${label}: rerun`);
  expect(billable(env.sandbox) - calls1, `${label}: rerun calls`).toBe(0);
  expect(await updates(db), `${label}: rerun updates`).toEqual(u1);
  expect(await state(db), `${label}: rerun state`).toEqual(after);
  expect(summaryOf(rerun), `${label}: rerun summary`).toMatchObject({ state: 'done', written: 0, conflicts: 0 });

  // The rollback restores exactly the rows the run changed, each once, and reports no conflict.
  await applySettings(db, kc.rollback);
  const rb = await runCli(['rollback', '--db', db, '--run', 'r1', '--batch-size', '7']);
  ok(rb, `${label}: rollback`);
  expect(await state(db), `${label}: rolled back`).toEqual(before);
  const u2 = await updates(db);
  expect(u2.n - u1.n, `${label}: rollback updates`).toBe(changed.length);
  await withClient(db, async (c) => {
    const { rows } = await c.query<{ rollback: string | null; n: number }>(
      `SELECT rollback, count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'r1' AND before IS NOT NULL GROUP BY 1`,
    );
    expect(rows, `${label}: rollback marks`).toEqual(changed.length ? [{ rollback: 'restored', n: changed.length }] : []);
  });
}

describe('dq-pg and the key column under the session settings', () => {
  // Key types under the default settings, killed and resumed: by default those whose text form a
  // setting or a collation can change, and the refused ones; DQ_KEY_FUZZ_ALL=1 runs every type
  // (about 2.5 s each).
  // (double, real, interval and bytea are in the targeted cases below.)
  const HAZARDS = ['numeric', 'textDe', 'textCi', 'date', 'timestamptz', 'intArray', 'composite'];
  it.each(process.env['DQ_KEY_FUZZ_ALL'] === '1' ? Object.keys(KEYS) : HAZARDS)(
    'key type %s: every row once, resume, rerun, rollback',
    async (name) => {
      await runCase({ key: KEYS[name]!, kill: true }, 11);
    },
    120_000,
  );

  // Targeted settings: lossy or ambiguous text forms, and settings changed between steps.
  const targeted: [string, KeyCase][] = [
    ['double, extra_float_digits 0', { key: KEYS['double']!, start: { extra_float_digits: '0' } }],
    ['double, extra_float_digits -15', { key: KEYS['double']!, start: { extra_float_digits: '-15' } }],
    ['real, extra_float_digits -4 (role)', { key: KEYS['real']!, role: { extra_float_digits: '-4' } }],
    ['double, extra_float_digits changed before resume', { key: KEYS['double']!, kill: true, resume: { extra_float_digits: '0' } }],
    [
      'date, DateStyle SQL DMY then MDY',
      { key: KEYS['date']!, start: { DateStyle: 'SQL, DMY' }, kill: true, resume: { DateStyle: 'SQL, MDY' }, rollback: { DateStyle: 'SQL, DMY' } },
    ],
    ['date, DateStyle German, rollback under SQL MDY', { key: KEYS['date']!, start: { DateStyle: 'German' }, rollback: { DateStyle: 'SQL, MDY' } }],
    [
      'timestamp, DateStyle Postgres DMY then ISO',
      { key: KEYS['timestamp']!, start: { DateStyle: 'Postgres, DMY' }, kill: true, resume: { DateStyle: 'ISO, MDY' }, rerun: { DateStyle: 'SQL, MDY' } },
    ],
    ['timestamptz, SQL style in Asia/Kolkata (IST)', { key: KEYS['timestamptz']!, start: { DateStyle: 'SQL, MDY', TimeZone: 'Asia/Kolkata' } }],
    [
      'timestamptz, TimeZone changed between every step',
      {
        key: KEYS['timestamptz']!,
        start: { TimeZone: 'UTC' },
        kill: true,
        resume: { TimeZone: 'Asia/Kolkata' },
        rerun: { TimeZone: 'America/New_York' },
        rollback: { TimeZone: 'Pacific/Chatham' },
      },
    ],
    [
      'interval, IntervalStyle sql_standard then postgres',
      {
        key: KEYS['interval']!,
        start: { IntervalStyle: 'sql_standard' },
        kill: true,
        resume: { IntervalStyle: 'postgres' },
        rollback: { IntervalStyle: 'iso_8601' },
      },
    ],
    [
      'bytea, bytea_output escape then hex',
      {
        key: KEYS['bytea']!,
        start: { bytea_output: 'escape' },
        kill: true,
        resume: { bytea_output: 'hex' },
        rerun: { bytea_output: 'escape' },
        rollback: { bytea_output: 'hex' },
      },
    ],
    ['text, standard_conforming_strings off', { key: KEYS['textDe']!, start: { standard_conforming_strings: 'off' }, kill: true }],
    [
      'money, lc_monetary changed',
      { key: KEYS['money']!, start: { lc_monetary: 'C' }, kill: true, resume: { lc_monetary: 'C.utf8' }, rollback: { lc_monetary: 'POSIX' } },
    ],
  ];
  it.each(targeted)(
    '%s',
    async (_name, kc) => {
      await runCase(kc, 23);
    },
    120_000,
  );

  // Review export and apply address rows by the stored key text too: a text key of another
  // collation than the bookkeeping's "C" (export joined them: "could not determine which collation").
  it.each(['textDe', 'textCi', 'domain', 'timestamptz'])(
    'review export and apply with a %s key',
    async (name) => {
      const key = KEYS[name]!;
      const db = await env.pg.createDatabase();
      const ids = await makeTable(db, key, 31);
      await applySettings(db, { TimeZone: 'Asia/Kolkata', DateStyle: 'SQL, DMY' });
      ok(await runCli(keyArgs(db, 'r1')), `${key.name}: run`);
      const review = await withClient(
        db,
        async (c) => (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'r1' AND status = 'review'`)).rows[0]!.n,
      );
      expect(review).toBeGreaterThan(0);
      const dir = await mkdtemp(join(tmpdir(), 'dq-key-review-'));
      const file = join(dir, 'review.csv');
      const exported = await runCli(['review', 'export', '--db', db, '--run', 'r1', '--output', file]);
      ok(exported, `${key.name}: export`);
      expect(JSON.parse(exported.stdout.trim().split('\n').at(-1)!)).toMatchObject({ rows: review });
      // Every row kept: the decision is the last cell, empty in the export.
      const text = await readFile(file, 'utf8');
      const lines = text.split('\r\n').map((l, n) => (n === 0 ? l : l.replace(/,""$/, ',"keep"').replace(/,$/, ',keep')));
      await writeFile(file, lines.join('\r\n'));
      await applySettings(db, { TimeZone: 'America/New_York', DateStyle: 'SQL, MDY' });
      const before = await state(db);
      const applied = await runCli(['review', 'apply', '--db', db, '--input', file, '--run-id', 'rv1']);
      ok(applied, `${key.name}: apply`);
      expect(await state(db)).toEqual(before);
      await withClient(db, async (c) => {
        const { rows } = await c.query<{ n: number; rows: number }>(
          `SELECT count(*)::int AS n, (SELECT count(DISTINCT c.id)::int FROM dq_cleanse.results r JOIN customers c ON c.k = (r.row_key COLLATE "default")::${key.type.replace(/ COLLATE .*/, '')} WHERE r.run_id = 'rv1') AS rows
           FROM dq_cleanse.results WHERE run_id = 'rv1' AND status = 'accepted'`,
        );
        expect(rows[0]).toEqual({ n: review, rows: review });
      });
      // The rerun reuses the decisions: no call, nothing back in review.
      const calls = billable(env.sandbox);
      const rerun = await runCli(keyArgs(db, 'r2'));
      ok(rerun, `${key.name}: rerun`);
      expect(billable(env.sandbox) - calls).toBe(0);
      const again = await withClient(
        db,
        async (c) => (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM dq_cleanse.results WHERE run_id = 'r2' AND status = 'review'`)).rows[0]!.n,
      );
      expect(again).toBe(0);
      expect(ids.length).toBeGreaterThan(0);
    },
    120_000,
  );

  // Seeded fuzz: a random key type, random settings at the start, and random changes before the
  // resume, the rerun and the rollback. A failure names its seed.
  const FUZZ_SEED = Number(process.env['DQ_KEY_FUZZ_SEED'] ?? 20261207);
  const FUZZ_CASES = Number(process.env['DQ_KEY_FUZZ_CASES'] ?? 2);
  it.each(Array.from({ length: FUZZ_CASES }, (_, i) => FUZZ_SEED + i))(
    'fuzz seed %i',
    async (seed) => {
      const r = seededRandom(seed);
      const key = KEYS[r.pick(Object.keys(KEYS))]!;
      const kc: KeyCase = {
        key,
        start: randomSettings(r, r.int(1, 4)),
        ...(r.chance(0.3) ? { role: randomSettings(r, 1) } : {}),
        kill: r.chance(0.6),
        resume: randomSettings(r, r.int(0, 3)),
        rerun: randomSettings(r, r.int(0, 3)),
        rollback: randomSettings(r, r.int(0, 3)),
      };
      await runCase(kc, seed);
    },
    120_000,
  );
});
