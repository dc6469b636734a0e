import { parseArgs } from 'node:util';
import { ExitCode } from '@dq/core';
import { cliFailure } from '@dq/core/cli';
import { CsvError, usageError } from '../errors.js';
import { INPUT_ENCODINGS } from '../source/types.js';
import { applyReview } from './apply.js';
import { exportReview } from './export.js';
import { refuseSameFiles } from './files.js';

/** The `dq-csv review --help` text. */
export const REVIEW_USAGE = `Usage: dq-csv review export --input <cleaned file> --output <review.csv> [--classes D,E]
       dq-csv review apply --input <review.csv> --output <cleaned file> --to <new file> [--encoding windows-1252] [--spreadsheet-safe]

Closes the loop on rows dq-csv validate left for a person (dq_status review: class D or E, or a
company search without a clear winner).

export   writes one row per record awaiting a decision: line (data row number in the cleaned
         file), every input column, class, request_id, row_check (what apply checks the row
         with: a spreadsheet may reformat the input cells), candidate_1_... candidate_N_... and
         an empty decision column. UTF-8 with BOM, CRLF; cells starting with = + - @ tab CR or '
         get a leading ' (taken off again by apply). Open it in a spreadsheet, fill in decision.
apply    writes --to: the cleaned file with the decisions applied, every other row byte for byte.
         decision: a candidate number (its fields go into the dq_ columns, dq_status accepted),
         keep (dq_status kept: the input values stand), invalid (dq_status invalid), or empty
         (undecided, left as is). dq_review_decision records the decision. Rows changed in the
         cleaned file since the export are conflicts and left as they are; a decision that is
         not one of these is named with its review-file line and skipped.

Options:
  --input <file>        export: the cleaned file (output of dq-csv validate); apply: the review file
  --output <file>       export: the review file to write; apply: the cleaned file
  --to <file>           apply: the new file (never the cleaned file or the review file)
  --classes <list>      export: result classes to export, default D,E
  --delimiter <char>    the cleaned file's delimiter; default: read from its header
  --format <fmt>        the cleaned file's format: csv, json, ndjson; default from its extension
                        (the review file is always CSV)
  --encoding <enc>      apply: the review file's encoding: utf8 (default, as exported) | latin1 |
                        windows-1252 (a spreadsheet's plain "CSV" format saves this one)
  --spreadsheet-safe    apply: the cleaned file (CSV) was written with validate --spreadsheet-safe;
                        the cells apply writes get the same leading ' before = + - @ tab CR or '.
                        A cleaned file that contradicts it, either way, is refused (exit 2)
  --help                this text

Prints one JSON summary line on stdout. Exit codes: 0 done; 2 bad usage, unreadable files, a
review file of another cleaned file, --to naming the cleaned or review file; 4 applied, but
some decisions were bad or in conflict (listed on stderr and in the summary); 1 unexpected.
`;

const FORMATS = ['csv', 'json', 'ndjson'] as const;

/** Runs `dq-csv review …` with the arguments after `review`; returns the exit code. */
export async function reviewMain(argv: readonly string[]): Promise<number> {
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args: [...argv],
        allowPositionals: true,
        strict: true,
        options: {
          input: { type: 'string' },
          output: { type: 'string' },
          to: { type: 'string' },
          classes: { type: 'string' },
          delimiter: { type: 'string' },
          format: { type: 'string' },
          'spreadsheet-safe': { type: 'boolean' },
          encoding: { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
      });
    } catch (err) {
      throw usageError('arguments', (err as Error).message);
    }
    const { values: v, positionals } = parsed;
    if (v.help || positionals[0] === 'help') {
      process.stdout.write(REVIEW_USAGE);
      return ExitCode.OK;
    }
    const command = positionals[0];
    if ((command !== 'export' && command !== 'apply') || positionals.length > 1) {
      throw usageError('review', `expected "export" or "apply", got ${positionals.length === 0 ? 'nothing' : `"${positionals.join(' ')}"`}`);
    }
    const delimiter = v.delimiter === '\\t' ? '\t' : v.delimiter;
    if (delimiter !== undefined && (delimiter.length !== 1 || /["\r\n]/.test(delimiter))) {
      throw usageError('--delimiter', `"${v.delimiter}" must be one character other than a quote or line break`);
    }
    const format = v.format === undefined ? undefined : FORMATS.find((f) => f === v.format);
    if (v.format !== undefined && format === undefined) throw usageError('--format', `"${v.format}" is not one of ${FORMATS.join(', ')}`);
    if (!v.input)
      throw usageError('--input', command === 'export' ? 'required: the cleaned file (output of dq-csv validate)' : 'required: the review file with decisions');
    if (!v.output)
      throw usageError(
        '--output',
        command === 'export' ? 'required: where to write the review file' : 'required: the cleaned file the review file was exported from',
      );
    if (command === 'export') {
      if (v.to) throw usageError('--to', 'is for review apply');
      if (v['spreadsheet-safe']) throw usageError('--spreadsheet-safe', 'is for review apply (the review file is always spreadsheet-safe)');
      if (v.encoding) throw usageError('--encoding', 'is for review apply (the review file export writes is UTF-8)');
      const classes = (v.classes ?? 'D,E')
        .split(',')
        .map((s) => s.trim().toUpperCase())
        .filter(Boolean);
      for (const c of classes) if (!/^[A-F]$/.test(c)) throw usageError('--classes', `"${c}" is not a result class (A-F), e.g. --classes D,E`);
      await refuseOutputIsInput(v.input, v.output);
      const summary = await exportReview({ input: v.input, output: v.output, classes, delimiter, format });
      process.stdout.write(JSON.stringify(summary) + '\n');
      return ExitCode.OK;
    }
    if (v.classes) throw usageError('--classes', 'is for review export');
    if (!v.to) throw usageError('--to', 'required: the new file to write (the cleaned file is never changed in place)');
    const encoding = v.encoding === undefined ? undefined : INPUT_ENCODINGS.find((e) => e === v.encoding);
    if (v.encoding !== undefined && encoding === undefined) throw usageError('--encoding', `"${v.encoding}" is not one of ${INPUT_ENCODINGS.join(', ')}`);
    const summary = await applyReview({
      input: v.input,
      output: v.output,
      to: v.to,
      delimiter,
      format,
      spreadsheetSafe: v['spreadsheet-safe'] ?? false,
      ...(encoding ? { encoding } : {}),
    });
    for (const c of summary.conflictRows) process.stderr.write(`dq-csv: review line ${c.reviewLine}: conflict, left as it is: ${c.reason}\n`);
    for (const b of summary.badDecisions)
      process.stderr.write(`dq-csv: review line ${b.reviewLine}: bad decision${b.decision ? ` "${b.decision}"` : ''}, skipped: ${b.reason}\n`);
    process.stdout.write(JSON.stringify(summary) + '\n');
    return summary.exitCode;
  } catch (err) {
    if (err instanceof CsvError) {
      process.stderr.write(`dq-csv: ${err.code}: ${err.message}\n`);
      return err.exitCode;
    }
    const failure = cliFailure('dq-csv', err);
    process.stderr.write(failure.text);
    return failure.exitCode;
  }
}

async function refuseOutputIsInput(input: string, output: string): Promise<void> {
  await refuseSameFiles([{ path: input, label: `the cleaned file ${input}` }], { path: output, label: `--output ${output}` }, '--output');
}
