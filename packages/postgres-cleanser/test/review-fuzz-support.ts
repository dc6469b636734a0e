import type { Expected } from '@dq/test-support/spreadsheet';
import { expect } from 'vitest';
import { summaryOf, type CliResult } from './support.js';

/** What the model of a review fuzz expects of each row of the review file (a row the file holds, by the array of its cells). */
export type ExpectedRows = ReadonlyMap<string[], { key: string; expected: Expected<'skipped'> }>;

/**
 * Checks a fuzzed `review apply` against the model: the summary's counts, the exit code (4 when a
 * decision was bad or a row conflicted), each bad decision named on stderr with its review-file line
 * and key and its reason, each conflict named by its key. The table itself is checked by the caller.
 */
export function expectAppliedAsModelled(applied: CliResult, expected: ExpectedRows, file: string, rowOf: (row: string[]) => number, context: string): void {
  const outcomes = [...expected.values()];
  const count = (kind: Expected<'skipped'>['kind']) => outcomes.filter((o) => o.expected.kind === kind).length;
  const summary = summaryOf(applied);
  expect(
    {
      applied: summary['applied'],
      kept: summary['kept'],
      invalid: summary['invalid'],
      conflicts: summary['conflicts'],
      badDecisions: summary['badDecisions'],
      skipped: summary['skipped'],
    },
    context,
  ).toEqual({
    applied: count('applied'),
    kept: count('kept'),
    invalid: count('invalid'),
    conflicts: count('conflict'),
    badDecisions: count('bad'),
    skipped: count('skipped'),
  });
  expect(applied.code, context).toBe(count('bad') + count('conflict') > 0 ? 4 : 0);
  for (const [row, { key, expected: e }] of expected) {
    if (e.kind === 'bad') {
      const named = applied.stderr.split('\n').find((l) => l.startsWith(`dq-pg: bad-decision: ${file} line ${rowOf(row)} (key ${key}): `));
      expect(named, `${context}\nthe bad decision of row ${rowOf(row)} (key ${key}) is named`).toBeDefined();
      expect(named, context).toContain(e.message);
    }
    if (e.kind === 'conflict') expect(applied.stderr, context).toContain(`conflict: key ${key} changed`);
  }
}
