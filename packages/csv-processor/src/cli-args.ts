import { checkEmptyFlags, commandLineRedactor as redactorOf, createFlagParsers, parseFlags, ENGINE_FLAG_OPTIONS, ENGINE_FLAGS_USAGE } from '@dq/core/cli';
import { ADDRESS_INCLUDE_VALUES, isCountryCode, MODES } from '@dq/core/schemas';
import { usageError } from './errors.js';
import { parseFieldMap } from './mapping.js';
import { formatFromPath, type ProcessFileOptions } from './options.js';
import { INPUT_ENCODINGS, type InputFormat } from './source/types.js';

const flags = createFlagParsers(usageError);
const { oneOf, number, url } = flags;

/** The `--help` text. */
export const USAGE = `Usage: dq-csv validate --input <file> --output <file> [options]
       dq-csv review export|apply ...   (rows left for a person: see dq-csv review --help)

Cleans a CSV, JSON or NDJSON file with the data-quality platform. Every input row is written to
the output, in order, with dq_* result columns appended; rows that cannot be parsed go to the
rejects file with their line number and the reason.

Options:
  --input <file>            file to clean (required); gzip-compressed (.csv.gz) is read as is
  --output <file>           cleaned file, same format as the input (required unless --dry-run)
  --rejects <file>          unparseable rows (CSV: line,code,reason,raw); default
                            <output without extension>.rejects.csv
  --map <field>=<col>,...   request fields from columns; default: columns named like the fields
                            (quote a name holding a comma or edge spaces: street="Strasse, Nr";
                            a repeated --map adds its fields)
                            address: street, houseNumber, addressLine, postalCode, locality,
                                     localityLine, country
                            company: company, zip, city, street   tr: trCourt, trType, trNo
                            vat: vatId
  --mode <mode>             address (default) | company | tr | vat
  --country <CC>            country for rows without one, e.g. DE
  --include <list>          ${ADDRESS_INCLUDE_VALUES.join(', ')}
  --delimiter <char>        CSV delimiter, default ','; '\\t' for tab
  --encoding <enc>          utf8 (default) | latin1 | windows-1252; a file with a UTF-16 byte order
                            mark is read as UTF-16; the output is always UTF-8; a UTF-8 file
                            given latin1 or windows-1252 is refused (it would be sent as Ã¼)
  --format <fmt>            csv | json | ndjson; default from the input's extension
  --spreadsheet-safe        prefix ' to every cell starting with = + - @ tab CR or ' (output and
                            rejects), for files opened in a spreadsheet; default: values as read
  --resume                  continue an interrupted run from its checkpoint (from the first row
                            if none); answers the interrupted run paid for are not bought again
  --dry-run                 read and check the whole file; print rows, rejects, distinct inputs,
                            API calls and the time at the rate limit; call nothing
  --report <file.html>      write the run report there: one HTML page (counts, corrections per
                            field, review queue, failures, cost), also when the run stops
  --max-failed <share>      exit 4 when rejected + unavailable rows exceed this share, default 0
  --batch-size <rows>       rows per durable batch and checkpoint, default 500
${ENGINE_FLAGS_USAGE}
  --base-url <url>          address API host (required; or env DQ_BASE_URL)
  --realtime-url <url>      company service host (env DQ_REALTIME_URL), default the base URL
  --api-key <key>           API key (required; or env DQ_API_KEY, better: flags show in ps)
  --help                    this text

Exit codes: 0 done, 1 unexpected error, 2 bad usage (also: an output that is the input, a
missing output folder, invalid input), 3 key/account/quota stopped the run (fix, then
--resume), 4 done but --max-failed passed, 5 the spending cap --max-calls was reached
(--resume to go on), 75 platform unreachable or interrupted (retry --resume), or another
run writing the same output (its pid is named).

Example:
  DQ_BASE_URL=https://api.example.com DQ_API_KEY=... dq-csv validate \\
    --input customers.csv --output customers.clean.csv --delimiter ';' --country DE \\
    --map street=Strasse,houseNumber=Hausnummer,postalCode=PLZ,locality=Ort --resume
`;

/** The parsed command line: either help, or the options of a run. */
export type CliCommand = { help: true } | { help: false; options: ProcessFileOptions };

const FORMATS: readonly InputFormat[] = ['csv', 'json', 'ndjson'];

const OPTIONS = {
  input: { type: 'string' },
  output: { type: 'string' },
  rejects: { type: 'string' },
  map: { type: 'string', multiple: true },
  mode: { type: 'string' },
  country: { type: 'string' },
  include: { type: 'string' },
  delimiter: { type: 'string' },
  encoding: { type: 'string' },
  format: { type: 'string' },
  'spreadsheet-safe': { type: 'boolean' },
  resume: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  report: { type: 'string' },
  'max-failed': { type: 'string' },
  'batch-size': { type: 'string' },
  ...ENGINE_FLAG_OPTIONS,
  'base-url': { type: 'string' },
  'realtime-url': { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Flags whose value is a secret, and the variables that stand for them. */
const SECRET_FLAGS = ['api-key'];
const SECRET_VARIABLES = ['DQ_API_KEY'];

/** `text` without the secrets of the command line `argv` (flags' and variables' values, URL passwords), for the message of a failure. */
export function commandLineRedactor(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): (text: string) => string {
  return redactorOf(argv, env, SECRET_FLAGS, SECRET_VARIABLES);
}

/**
 * Parses `argv` (without node and script) and the DQ_* variables of `env`. Throws a CsvError with
 * code `usage` naming the flag at fault.
 */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): CliCommand {
  const parsed = parseFlags(argv, OPTIONS, usageError);
  const { values: v, positionals } = parsed;
  if (v.help || positionals[0] === 'help') return { help: true };
  checkEmptyFlags(v, USAGE, usageError);
  if (positionals[0] === 'validate' && positionals.length > 1) {
    // `dq-csv validate file.csv`: the file is a flag's value.
    const rest = positionals.slice(1);
    const hint = v.input ? 'every setting is a flag, e.g. --output <file>' : `name the input with --input, e.g. dq-csv validate --input ${rest[0]}`;
    throw usageError('command', `unexpected "${rest.join(' ')}" after "validate": ${hint}`);
  }
  if (positionals[0] !== 'validate') {
    throw usageError('command', `expected "validate", got ${positionals.length === 0 ? 'nothing' : `"${positionals.join(' ')}"`}`);
  }
  if (!v.input) throw usageError('--input', 'required: the file to clean');
  if (!v.output && !v['dry-run']) throw usageError('--output', 'required: where to write the cleaned file');
  // A gzip input is read decompressed; the output is always written as text, resumable by offset.
  for (const flag of ['output', 'rejects'] as const) {
    const path = v[flag];
    if (path !== undefined && /\.gz$/i.test(path)) {
      throw usageError(
        `--${flag}`,
        `"${path}" names a gzip file, but dq-csv writes plain text (cut back to its checkpoint on --resume): name it without .gz and compress it after the run`,
      );
    }
  }
  // The output is in the input's format: a name saying otherwise (a CSV written to out.json, read
  // by the next step as JSON) is refused. NDJSON named .json is left alone: many tools name it so.
  const format = v.format === undefined ? formatFromPath(v.input) : oneOf('--format', v.format, FORMATS);
  const named = v.output === undefined ? undefined : /\.(csv|tsv|json|ndjson|jsonl)$/i.exec(v.output)?.[1]?.toLowerCase();
  if (named !== undefined && (named === 'csv' || named === 'tsv') !== (format === 'csv')) {
    throw usageError(
      '--output',
      `"${v.output}" names a .${named} file, but the output is written in the input's format, ${format} (dq-csv does not convert): name it .${format}`,
    );
  }
  if (v.report !== undefined && v['dry-run']) throw usageError('--report', 'a dry run calls nothing and has no report to write; drop --report or --dry-run');

  const mode = oneOf('--mode', v.mode ?? 'address', MODES);
  const country = v.country?.trim().toUpperCase();
  if (country !== undefined && !isCountryCode(country)) throw usageError('--country', `"${v.country}" is not a two-letter country code`);
  const include = v.include
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const value of include ?? []) oneOf('--include', value, ADDRESS_INCLUDE_VALUES);
  const delimiter = v.delimiter === '\\t' ? '\t' : v.delimiter;
  if (delimiter !== undefined && (delimiter.length !== 1 || delimiter.charCodeAt(0) > 0x7f || /["\r\n]/.test(delimiter))) {
    throw usageError('--delimiter', `"${v.delimiter}" must be one ASCII character other than a quote or line break`);
  }
  const env_ = (name: string) => (env[name] === '' ? undefined : env[name]);
  const options: ProcessFileOptions = {
    input: v.input,
    output: v.output ?? `${v.input}.dry-run`,
    rejects: v.rejects,
    mode,
    map: v.map === undefined ? undefined : parseFieldMap(v.map, mode),
    country,
    include,
    delimiter,
    encoding: v.encoding === undefined ? undefined : oneOf('--encoding', v.encoding, INPUT_ENCODINGS),
    format: v.format === undefined ? undefined : oneOf('--format', v.format, FORMATS),
    spreadsheetSafe: v['spreadsheet-safe'] ?? false,
    resume: v.resume ?? false,
    dryRun: v['dry-run'] ?? false,
    ...(v.report !== undefined ? { report: v.report } : {}),
    maxFailed: v['max-failed'] === undefined ? 0 : number('--max-failed', v['max-failed'], 0, 1, false),
    batchSize: v['batch-size'] === undefined ? undefined : number('--batch-size', v['batch-size'], 1, 100_000, true),
    baseUrl: url('--base-url', v['base-url'] ?? env_('DQ_BASE_URL')),
    realtimeUrl: url('--realtime-url', v['realtime-url'] ?? env_('DQ_REALTIME_URL')),
    apiKey: v['api-key'] ?? env_('DQ_API_KEY'),
    engine: flags.engine(v),
  };
  return { help: false, options };
}
