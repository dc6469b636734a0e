import { editDistance, nearestNames } from '@dq/core/cli';
import { expect, it } from 'vitest';

it('names the known names at most two edits away, nearest first, ties in the order given', () => {
  const flags = ['output', 'input', 'report', 'rate-limit', 'max-calls'];
  expect(nearestNames('outptu', flags)).toEqual(['output']);
  expect(nearestNames('inpt', flags)).toEqual(['input']);
  // A start of three letters or more counts as one edit, as --out for --output.
  expect(nearestNames('out', flags)).toEqual(['output']);
  expect(nearestNames('rate', flags)).toEqual(['rate-limit']);
  expect(nearestNames('verbose', flags)).toEqual([]);
  expect(nearestNames('topicA', ['topicB', 'topicC'])).toEqual(['topicB', 'topicC']);
  expect(nearestNames('topicA', ['topicC', 'topicB'])).toEqual(['topicC', 'topicB']);
});

it('leaves the start rule out and keeps to the edits asked for', () => {
  expect(nearestNames('cust', ['customers'], { prefixes: false })).toEqual([]);
  expect(nearestNames('custmers', ['customers', 'custom'], { maxEdits: 2, prefixes: false })).toEqual(['customers']);
  expect(editDistance('custmers', 'custom', 2)).toBe(3);
  expect(editDistance('kitten', 'sitting')).toBe(3);
});
