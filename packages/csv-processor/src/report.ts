import { ReportCollector, writeReport } from '@dq/core/report';
import type { EngineRecord, Mode, RecordResult, RunReport } from '@dq/core';
import type { ReportDetails } from '@dq/core/report';
import type { ResultColumns } from './sink/result-columns.js';
import type { SourceReject, SourceRow } from './source/types.js';
import type { RunSummary } from './run.js';
import { summaryObject } from './summary.js';

/**
 * Request field → the result columns holding the value the result gives it (a line field, e.g.
 * `addressLine`, compares with its parts joined by a space, as a person would write them).
 */
const RESULT_COLUMN: Record<Mode, Record<string, string[]>> = {
  address: {
    street: ['dq_street'],
    houseNumber: ['dq_house_number'],
    postalCode: ['dq_postal_code'],
    locality: ['dq_locality'],
    country: ['dq_country'],
    addressLine: ['dq_street', 'dq_house_number'],
    localityLine: ['dq_postal_code', 'dq_locality'],
  },
  company: { company: ['dq_company_name'], zip: ['dq_company_zip'], city: ['dq_company_city'], street: ['dq_company_street'] },
  tr: { trCourt: ['dq_tr_court'], trType: ['dq_tr_type'], trNo: ['dq_tr_no'] },
  vat: {},
};

/**
 * The details of dq-csv's run report, row by row as the sink writes them: corrections compare the
 * mapped input values with the result columns of the same fields, as written to the output.
 */
export class CsvReportDetails {
  readonly #collector = new ReportCollector();
  readonly #fields: [field: string, indexes: number[]][];
  readonly #columns: ResultColumns;

  constructor(mode: Mode, columns: ResultColumns) {
    this.#columns = columns;
    this.#fields = Object.entries(RESULT_COLUMN[mode]).flatMap(([field, names]) => {
      const indexes = names.map((name) => columns.names.indexOf(name));
      return indexes.includes(-1) ? [] : [[field, indexes] as [string, number[]]];
    });
  }

  row(item: SourceRow, record: EngineRecord, result: RecordResult): void {
    if (result.status !== 'accepted' && result.status !== 'review' && result.status !== 'unavailable' && result.status !== 'invalid-input') return;
    const written = this.#columns.values(result);
    const before: Record<string, string | number | null | undefined> = {};
    const after: Record<string, string | number | null | undefined> = {};
    for (const [field, indexes] of this.#fields) {
      if (!(field in record)) continue; // not mapped: nothing to compare
      before[field] = record[field] as string | number | null | undefined;
      const parts = indexes.map((i) => written[i]).filter((v) => v !== null && v !== undefined && v !== '');
      after[field] = parts.length === 0 ? null : parts.join(' ');
    }
    this.#collector.add(`line ${item.line}`, result, before, after);
  }

  reject(item: SourceReject): void {
    this.#collector.reject(`line ${item.line}`, item.code, item.reason);
  }

  details(output: string, engine: RunReport | undefined, resumed: boolean): ReportDetails {
    const details = this.#collector.details(`dq-csv review export --input ${shellWord(output)} --output review.csv`);
    return {
      ...details,
      ...(engine?.callsPerSecond ? { rate: engine.callsPerSecond } : {}),
      ...(resumed
        ? {
            notes: [
              "This run resumed an interrupted one: the counts are the whole file's; corrections, review examples, failures and rejects are those of the rows this run wrote, and calls per second those this run made.",
            ],
          }
        : {}),
    };
  }
}

/**
 * Writes the run report of `summary` to `path`, every line passed through `redact`; its numbers
 * come from `printed`, the object of the JSON summary line (built from `summary` when not given).
 */
export async function writeCsvReport(path: string, summary: RunSummary, redact: (text: string) => string, printed = summaryObject(summary)): Promise<void> {
  await writeReport(
    path,
    {
      tool: 'dq-csv validate',
      subject: summary.paths.input,
      run: summary.paths.output,
      generatedAt: new Date().toISOString(),
      summary: printed,
      details: summary.details ?? {},
    },
    redact,
  );
}

function shellWord(text: string): string {
  return /^[A-Za-z0-9_.,:=@%/+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
