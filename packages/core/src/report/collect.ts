import type { RecordResult } from '../engine/index.js';
import type { CodeGroup, FieldCorrections, ReportDetails, ReportExample } from './model.js';

/** Examples kept per field or code. */
const EXAMPLES = 5;
/** Request ids kept per failure code. */
const REQUEST_IDS = 10;

type Value = string | number | null | undefined;

/**
 * Collects the report's details record by record, in bounded memory (counts plus the first few
 * examples): corrections per field (input value → value the result carries, for accepted records),
 * the review queue by class, failures and rejects by code with request ids.
 */
export class ReportCollector {
  readonly #fields = new Map<string, FieldCorrections>();
  readonly #failures = new Map<string, CodeGroup>();
  readonly #rejects = new Map<string, CodeGroup>();
  readonly #reviewByClass: Record<string, number> = {};
  readonly #reviewExamples: ReportExample[] = [];
  #review = 0;
  #rowsChanged = 0;

  /**
   * One record: `before` are its input values by field, `after` the values its result carries for
   * the same fields (as the output writes them). Corrections count for accepted records only:
   * review and invalid records keep their input.
   */
  add(where: string, result: RecordResult, before: Record<string, Value>, after: Record<string, Value>): void {
    if (result.status === 'accepted') {
      let changed = false;
      for (const [field, value] of Object.entries(after)) {
        const old = text(before[field]);
        const now = text(value);
        if (now === null || now === old) continue;
        changed = true;
        let f = this.#fields.get(field);
        if (!f) this.#fields.set(field, (f = { field, changed: 0, examples: [] }));
        f.changed += 1;
        if (f.examples.length < EXAMPLES) f.examples.push({ where, before: old, after: now });
      }
      if (changed) this.#rowsChanged += 1;
    } else if (result.status === 'review') {
      this.#review += 1;
      const cls = result.resultClass ?? '-';
      this.#reviewByClass[cls] = (this.#reviewByClass[cls] ?? 0) + 1;
      if (this.#reviewExamples.length < EXAMPLES) {
        const input = Object.values(before)
          .map(text)
          .filter((v) => v !== null)
          .join(', ');
        const suggestion = Object.values(after)
          .map(text)
          .filter((v) => v !== null)
          .join(', ');
        this.#reviewExamples.push({
          where,
          before: input,
          after: suggestion,
          text: `class ${cls}`,
          ...(result.requestId ? { requestId: result.requestId } : {}),
        });
      }
    } else if (result.status === 'unavailable' || result.status === 'invalid-input') {
      const error = result.error;
      const message = error ? [error.message, ...(error.violations ?? []).map((v) => `${v.fieldName}: ${v.message}`)].join('; ') : result.status;
      addTo(this.#failures, error?.code ?? result.status, { where, text: message }, result.requestId ?? error?.requestId);
    }
  }

  /** A record the source could not parse. */
  reject(where: string, code: string, reason: string): void {
    addTo(this.#rejects, code, { where, text: reason }, undefined);
  }

  /** The collected details (copies). */
  details(reviewCommand: string): ReportDetails {
    return {
      corrections: { fields: [...this.#fields.values()].sort((a, b) => b.changed - a.changed), rows: this.#rowsChanged },
      review: { count: this.#review, byClass: { ...this.#reviewByClass }, command: reviewCommand, examples: [...this.#reviewExamples] },
      failures: sorted(this.#failures),
      rejects: sorted(this.#rejects),
    };
  }
}

function text(value: Value): string | null {
  if (value === null || value === undefined) return null;
  return String(value);
}

function addTo(groups: Map<string, CodeGroup>, code: string, example: ReportExample, requestId: string | undefined): void {
  let g = groups.get(code);
  if (!g) groups.set(code, (g = { code, count: 0, requestIds: [], examples: [] }));
  g.count += 1;
  if (requestId && g.requestIds.length < REQUEST_IDS && !g.requestIds.includes(requestId)) g.requestIds.push(requestId);
  if (g.examples.length < EXAMPLES) g.examples.push(requestId ? { ...example, requestId } : example);
}

function sorted(groups: Map<string, CodeGroup>): CodeGroup[] {
  return [...groups.values()].sort((a, b) => b.count - a.count);
}
