import { checkEmptyFlags, createFlagParsers, mapEntries, parseFlags, ENGINE_FLAG_OPTIONS, ENGINE_FLAGS_USAGE } from '@dq/core/cli';
import { MODE_FIELDS } from '@dq/core/engine';
import { ADDRESS_INCLUDE_VALUES, isCountryCode, MODES, RESULT_CLASSES } from '@dq/core/schemas';
import type { ResultClass } from '@dq/core';
import { usageError } from './errors.js';
import type { CleanseOptions } from './options.js';

const flags = createFlagParsers(usageError);
const { oneOf, number, url } = flags;

/** The `--help` text. */
export const USAGE = `Usage:
  dq-pg cleanse --db <url> --table <schema.table> [--key <column>] [--map <field>=<column>,...] [options]
  dq-pg rollback --db <url> --run <id>
  dq-pg status --db <url> [--run <id>] [--json]
  dq-pg report --db <url> --run <id> --output <file.html>
  dq-pg init --db <url>
  dq-pg review export --db <url> --run <id> [--classes D,E] [--table <name>] --output <file.csv>
  dq-pg review apply --db <url> --input <file.csv> [--run-id <id>] [--batch-size <rows>]

Cleans text columns of a PostgreSQL table in place with the data-quality platform. Rows are read
in key order, a page at a time; corrected values are written only where the row still holds what
was read, with an audit row (before/after) and a results row per row in the same transaction.
Runs resume where they stopped, several processes with the same --run-id share the work, and
rollback restores the audited values except for rows changed again since.

cleanse options:
  --db <url>                postgres://user:password@host:port/db (env DQ_DATABASE_URL)
  --table <name>            table or schema.table (required)
  --key <column>            unique, non-NULL key column; default the primary key
  --map <field>=<col>,...   request fields from columns; default: columns named like the fields
                            (or their snake_case). address: ${MODE_FIELDS.address.join(', ')}
                            company: ${MODE_FIELDS.company.join(', ')}   tr: ${MODE_FIELDS.tr.join(', ')}   vat: ${MODE_FIELDS.vat.join(', ')}
  --where <sql>             only rows matching this SQL predicate (your own SQL, run as given)
  --status-columns <r>=<col>,...  also write each row's results into columns of the table:
                            status, class, requestId, checkedAt (text columns; checkedAt may be
                            a timestamp), e.g. status=dq_status,class=dq_class
  --mode <mode>             address (default) | company | tr | vat
  --country <CC>            country for rows without one, e.g. DE
  --accept <classes>        result classes whose corrections are written, default A,B,C
                            (D and E stay for review, F is invalid, unless listed here)
  --include <list>          ${ADDRESS_INCLUDE_VALUES.join(', ')}
  --batch-size <rows>       rows per page: one API batch and one transaction, default 1000
  --pages-per-claim <n>     pages per key range claimed by a process, default 10
  --workers <n>             range workers in this process (3 connections each), default 4
  --read-ahead <0|1>        1 = validate the next page while one is written (needs idle cores
                            to pay off; a crash then repeats up to two pages of calls), default 0
  --run-id <id>             run to resume or join; default a new id (printed)
  --dry-run                 write nothing; print each row that would change (NDJSON) and the counts
                            (the summary's wouldWrite: rows a run would write)
  --max-failed <share>      exit 4 when unavailable rows exceed this share, default 0
  --report <file.html>      write the run report there at the end (also when the run stops): one
                            HTML page with counts, corrections per column, review queue,
                            failures, conflicts and calls per second
${ENGINE_FLAGS_USAGE}
  --base-url <url>          address API host (required; or env DQ_BASE_URL)
  --realtime-url <url>      company service host (env DQ_REALTIME_URL), default the base URL
  --api-key <key>           API key (required; or env DQ_API_KEY, better: flags show in ps)

rollback options:  --db <url>  --run <id>
status options:    --db <url>  [--run <id>]  [--json]
review export:     one CSV row per row of cleanse run --run awaiting a decision (status review,
                   of --classes, default D,E; company runs: every review row), with its current
                   values, class, request id, each candidate as candidate_<n>_<field> columns and
                   an empty decision column; for spreadsheets (UTF-8 with BOM, CRLF, formula-like
                   cells get a leading '). Nothing to review: a header-only file, exit 0
review apply:      applies the decision column: a candidate number, keep or invalid (empty:
                   skipped), as review run --run-id (default a new id; rerun it to resume), guarded,
                   audited, undone by rollback. Exit 4 when a decision cell was bad or a row had
                   changed since the export (each named on stderr), 0 when every decision applied
report options:    --db <url>  --run <id>  --output <file.html>: the run report of a recorded run
                   (every process and resume of it), from the database
init:              creates (or upgrades) the bookkeeping schema dq_cleanse; run it once as the
                   role that is to own it, then grant the ETL role what the README lists

Exit codes: 0 done, 1 unexpected error, 2 bad usage or table/column/key problem (or a read-only
database), 3 key/account/quota stopped the run (fix, then rerun with --run-id), 4 done but
--max-failed passed (rollback: rows changed since the run were left alone), 5 the spending cap
--max-calls was reached (rerun with --run-id to go on),
75 database or platform unavailable, or interrupted (rerun with --run-id), or another run of the
same rows is at work (join it with its --run-id, or rerun once it ended).
`;

/** A parsed command line. */
export type CliCommand =
  | { command: 'help' }
  | { command: 'cleanse'; options: Omit<CleanseOptions, 'baseUrl' | 'apiKey'> & { baseUrl?: string; apiKey?: string } }
  | { command: 'rollback'; db: string | undefined; runId: string }
  | { command: 'status'; db: string | undefined; runId?: string; json: boolean }
  | { command: 'init'; db: string | undefined }
  | { command: 'review-export'; db: string | undefined; runId: string; output: string; classes?: ResultClass[]; table?: string }
  | { command: 'review-apply'; db: string | undefined; input: string; runId?: string; batchSize?: number }
  | { command: 'report'; db: string | undefined; runId: string; output: string };

/**
 * Parses `argv` (without node and script) and the DQ_* variables of `env`. Throws a CleanseError
 * with code `usage` naming the flag at fault.
 */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): CliCommand {
  const parsed = parseFlags(
    argv,
    {
      db: { type: 'string' },
      table: { type: 'string' },
      key: { type: 'string' },
      // Repeated, its entries add up (README "The commands"), as dq-csv's and dq-kafka's do.
      map: { type: 'string', multiple: true },
      where: { type: 'string' },
      mode: { type: 'string' },
      country: { type: 'string' },
      accept: { type: 'string' },
      include: { type: 'string' },
      'batch-size': { type: 'string' },
      'pages-per-claim': { type: 'string' },
      workers: { type: 'string' },
      'read-ahead': { type: 'string' },
      'status-columns': { type: 'string' },
      'run-id': { type: 'string' },
      run: { type: 'string' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      'max-failed': { type: 'string' },
      ...ENGINE_FLAG_OPTIONS,
      'base-url': { type: 'string' },
      'realtime-url': { type: 'string' },
      'api-key': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      report: { type: 'string' },
      classes: { type: 'string' },
      output: { type: 'string' },
      input: { type: 'string' },
    },
    usageError,
  );
  const { values: v, positionals } = parsed;
  if (v.help || positionals[0] === 'help') return { command: 'help' };
  checkEmptyFlags(v, USAGE, usageError);
  const envOf = (name: string) => (env[name] === '' ? undefined : env[name]);
  const db = v.db ?? envOf('DQ_DATABASE_URL');
  if (positionals[0] === 'review') return parseReview(positionals.slice(1), v, db);
  const [command, ...rest] = positionals;
  if (rest.length > 0) throw usageError('command', `unexpected "${rest.join(' ')}" after "${command}"`);
  if (command === 'init') return { command, db };
  if (command === 'status') return { command, db, json: v.json ?? false, ...(v.run ? { runId: v.run } : {}) };
  if (command === 'rollback') {
    const runId = v.run ?? v['run-id'];
    if (!runId) throw usageError('--run', 'required: the id of the run to roll back (dq-pg status lists them)');
    return { command, db, runId };
  }
  if (command === 'report') {
    const runId = v.run ?? v['run-id'];
    if (!runId) throw usageError('--run', 'required: the id of the run to report on (dq-pg status lists them)');
    if (!v.output) throw usageError('--output', 'required: the HTML file to write, e.g. --output run.html');
    return { command, db, runId, output: v.output };
  }
  if (command !== 'cleanse') {
    throw usageError('command', `expected cleanse, rollback, status, report, review or init, got ${command === undefined ? 'nothing' : `"${command}"`}`);
  }
  if (!v.table) throw usageError('--table', 'required: the table to clean');
  const mode = oneOf('--mode', v.mode ?? 'address', MODES);
  const country = v.country?.trim().toUpperCase();
  if (country !== undefined && !isCountryCode(country)) throw usageError('--country', `"${v.country}" is not a two-letter country code`);
  const include = list(v.include);
  for (const value of include ?? []) oneOf('--include', value, ADDRESS_INCLUDE_VALUES);
  const accept = list(v.accept)?.map((c) => oneOf('--accept', c.toUpperCase(), RESULT_CLASSES));
  const engine: NonNullable<CleanseOptions['engine']> = flags.engine(v);
  // The processes of one run share the account's rate budget through the run's own database,
  // unless --budget / --account-db put it elsewhere (or --budget off keeps it per process).
  if (engine.budget === undefined && db !== undefined && /^postgres(ql)?:\/\//.test(db)) engine.budget = db;
  const options: Extract<CliCommand, { command: 'cleanse' }>['options'] = {
    db: db ?? '',
    table: v.table,
    mode,
    engine,
    dryRun: v['dry-run'] ?? false,
    maxFailed: v['max-failed'] === undefined ? 0 : number('--max-failed', v['max-failed'], 0, 1, false),
  };
  if (v.key !== undefined) options.key = v.key;
  if (v.map !== undefined) options.map = parseMap(v.map);
  if (v['status-columns'] !== undefined) options.statusColumns = parseMap(v['status-columns'], '--status-columns');
  if (v.where !== undefined) {
    if (v.where.trim() === '') throw usageError('--where', 'is empty');
    options.where = v.where;
  }
  if (country !== undefined) options.country = country;
  if (accept !== undefined) options.accept = accept;
  if (include !== undefined) options.include = include;
  if (v['batch-size'] !== undefined) options.batchSize = number('--batch-size', v['batch-size'], 1, 100_000, true);
  if (v['pages-per-claim'] !== undefined) options.pagesPerClaim = number('--pages-per-claim', v['pages-per-claim'], 1, 1_000_000, true);
  if (v.workers !== undefined) options.workers = number('--workers', v.workers, 1, 64, true);
  if (v['read-ahead'] !== undefined) options.readAhead = number('--read-ahead', v['read-ahead'], 0, 1, true) === 1;
  if (v['run-id'] !== undefined) options.runId = runIdOf(v['run-id']);
  if (v.report !== undefined) options.report = v.report;
  const baseUrl = url('--base-url', v['base-url'] ?? envOf('DQ_BASE_URL'));
  const realtimeUrl = url('--realtime-url', v['realtime-url'] ?? envOf('DQ_REALTIME_URL'));
  const apiKey = v['api-key'] ?? envOf('DQ_API_KEY');
  if (baseUrl !== undefined) options.baseUrl = baseUrl;
  if (realtimeUrl !== undefined) options.realtimeUrl = realtimeUrl;
  if (apiKey !== undefined) options.apiKey = apiKey;
  return { command: 'cleanse', options };
}

/** `review export …` / `review apply …`. */
function parseReview(rest: readonly string[], v: Record<string, string | string[] | boolean | undefined>, db: string | undefined): CliCommand {
  const [sub, ...extra] = rest;
  if (extra.length > 0) throw usageError('command', `unexpected "${extra.join(' ')}" after "review ${sub}"`);
  const text = (name: string): string | undefined => (typeof v[name] === 'string' ? (v[name] as string) : undefined);
  if (sub === 'export') {
    const runId = text('run');
    if (!runId) throw usageError('--run', 'required: the cleanse run whose review rows to export (dq-pg status lists them)');
    const output = text('output');
    if (!output) throw usageError('--output', 'required: the CSV file to write, e.g. review.csv');
    const classes = list(text('classes'))?.map((c) => oneOf('--classes', c.toUpperCase(), RESULT_CLASSES));
    if (classes?.length === 0) throw usageError('--classes', 'names no class; e.g. D,E');
    const table = text('table');
    return { command: 'review-export', db, runId, output, ...(classes ? { classes } : {}), ...(table ? { table } : {}) };
  }
  if (sub === 'apply') {
    const input = text('input');
    if (!input) throw usageError('--input', 'required: the review file with its decision column filled in');
    const runId = text('run-id');
    const batch = text('batch-size');
    return {
      command: 'review-apply',
      db,
      input,
      ...(runId ? { runId: runIdOf(runId) } : {}),
      ...(batch ? { batchSize: number('--batch-size', batch, 1, 100_000, true) } : {}),
    };
  }
  throw usageError('command', `expected "review export" or "review apply", got ${sub === undefined ? '"review" alone' : `"review ${sub}"`}`);
}

/**
 * `street=strasse,postalCode=plz` → { street: 'strasse', postalCode: 'plz' }. A column holding a
 * comma or spaces at its ends is quoted as in CSV (`street="Strasse, Nr"`, core's `mapEntries`), and
 * comes back in SQL's quotes (`"Strasse, Nr"`); several texts (`--map` given more than once) add
 * up, as if written as one.
 */
export function parseMap(text: string | readonly string[], flag = '--map'): Record<string, string> {
  const map: Record<string, string> = {};
  const entries = (typeof text === 'string' ? [text] : text).flatMap((t) => mapEntries(t, 'name', (problem) => usageError(flag, problem)));
  for (const { text: pair, field, value, quoted } of entries) {
    if (value === undefined || field === '' || value === '') throw usageError(flag, `"${pair}" is not field=column`);
    if (map[field] !== undefined) throw usageError(flag, `"${field}" is named twice`);
    // A quoted column is that name exactly, as SQL's quotes say (pre-flight matches an unquoted one
    // ignoring case when only one column fits): kept in SQL's quotes for pre-flight to tell.
    map[field] = quoted ? `"${value.replace(/"/g, '""')}"` : value;
  }
  return map;
}

function runIdOf(text: string): string {
  if (!/^[A-Za-z0-9._:-]{1,100}$/.test(text)) throw usageError('--run-id', `"${text}" must be 1–100 letters, digits, ".", "_", ":" or "-"`);
  return text;
}

function list(text: string | undefined): string[] | undefined {
  return text
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
