import type { PolicyStatus, ResultClass } from './types.js';

/**
 * The default result policy (docs/architecture.md "Result policy"): A, B, C are accepted and their
 * corrected values may be written; D and E go to review; F is invalid.
 */
export const DEFAULT_POLICY: Readonly<Record<ResultClass, PolicyStatus>> = Object.freeze({
  A: 'accepted',
  B: 'accepted',
  C: 'accepted',
  D: 'review',
  E: 'review',
  F: 'invalid',
});

/** The default policy with the given classes overridden. */
export function resolvePolicy(overrides: Partial<Record<ResultClass, PolicyStatus>> = {}): Readonly<Record<ResultClass, PolicyStatus>> {
  return Object.freeze({ ...DEFAULT_POLICY, ...overrides });
}
