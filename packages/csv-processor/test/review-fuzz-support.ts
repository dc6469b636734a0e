import type { Rand } from '@dq/test-support/random';
import { randomSave as randomSaveOf, type Save } from '@dq/test-support/spreadsheet';
import { expect } from 'vitest';
import type { CliRun } from './helpers.js';

/**
 * A way a spreadsheet saves a review file, not with both an added column and rows without their
 * empty ends: dq-csv's reader takes a multi-line record for one row only when it has the header's
 * width (else its quote is read as a stray one), see review-fuzz.test.ts.
 */
export function randomSave(r: Rand): Save {
  const save = randomSaveOf(r);
  if (save.dropTrailing) save.extraColumn = false;
  return save;
}

/** A CLI run that printed no stack trace. */
export function noStackTrace(run: CliRun): void {
  expect(run.stderr).not.toMatch(/\n\s+at /);
}
