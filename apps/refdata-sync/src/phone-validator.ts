/**
 * A validator for phone-analysis parameters built from the describe response, so
 * connectors refuse bad parameters before a paid call: Enum → one of the listed codes, String → at
 * most `length` characters, Numeric → a number within `minimumValue`..`maximumValue`; defaults are
 * filled in for parameters left out.
 */
import type { PhoneDescribe, PhoneParameter, Violation } from '@dq/core';

/** Parameter values as sent in the analysis request's query string. */
export type PhoneParams = Record<string, string | number>;

/** Checks phone-analysis parameters against a description. */
export interface PhoneValidator {
  /** Described parameter names, in description order. */
  readonly parameters: readonly string[];
  /** Default value of every parameter that has one. */
  readonly defaults: Readonly<PhoneParams>;
  /**
   * Checks `params`: every described one present (or defaulted) and valid, no unknown parameter
   * (inputs named `in_*` pass through unchecked). Returns the parameters with defaults applied, or
   * the violations naming each bad field.
   */
  check(params: Readonly<Record<string, unknown>>): { ok: true; params: PhoneParams } | { ok: false; violations: Violation[] };
}

function checkOne(p: PhoneParameter, value: unknown): { value?: string | number; problem?: string } {
  switch (p.type) {
    case 'Enum': {
      const codes = Object.values(p.values ?? {});
      return typeof value === 'string' && codes.includes(value) ? { value } : { problem: `must be one of ${codes.join(', ')}; got ${JSON.stringify(value)}` };
    }
    case 'String': {
      if (typeof value !== 'string') return { problem: `must be a string; got ${JSON.stringify(value)}` };
      return p.length !== undefined && value.length > p.length ? { problem: `must be at most ${p.length} characters; got ${value.length}` } : { value };
    }
    case 'Numeric': {
      const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      if (!Number.isFinite(n)) return { problem: `must be a number; got ${JSON.stringify(value)}` };
      if ((p.minimumValue !== undefined && n < p.minimumValue) || (p.maximumValue !== undefined && n > p.maximumValue)) {
        return { problem: `must be between ${p.minimumValue ?? '-∞'} and ${p.maximumValue ?? '∞'}; got ${n}` };
      }
      return { value: n };
    }
    default:
      // A type the contract does not list: accept scalars as they are rather than refuse a valid call.
      return typeof value === 'string' || typeof value === 'number' ? { value } : { problem: `must be a string or number` };
  }
}

/** Builds the validator from a describe response (all `content` elements' parameters). */
export function buildPhoneValidator(description: PhoneDescribe): PhoneValidator {
  const params = description.content.flatMap((c) => c.parameters);
  const byName = new Map(params.map((p) => [p.name, p]));
  const defaults: PhoneParams = {};
  for (const p of params) {
    if (p.defaultValue !== undefined && p.defaultValue !== null) defaults[p.name] = p.defaultValue;
  }
  return {
    parameters: params.map((p) => p.name),
    defaults,
    check(input) {
      const out: PhoneParams = {};
      const violations: Violation[] = [];
      for (const [name, value] of Object.entries(input)) {
        if (value === undefined) continue;
        const p = byName.get(name);
        if (p === undefined) {
          if (name.startsWith('in_') && (typeof value === 'string' || typeof value === 'number')) out[name] = value;
          else violations.push({ fieldName: name, message: `is not a parameter of the phone analysis (known: ${[...byName.keys()].join(', ')})` });
          continue;
        }
        const r = checkOne(p, value);
        if (r.problem !== undefined) violations.push({ fieldName: name, message: r.problem });
        else if (r.value !== undefined) out[name] = r.value;
      }
      for (const p of params) {
        if (out[p.name] !== undefined || violations.some((v) => v.fieldName === p.name)) continue;
        const d = defaults[p.name];
        if (d !== undefined) out[p.name] = d;
        else violations.push({ fieldName: p.name, message: 'is required (the description gives no default)' });
      }
      return violations.length > 0 ? { ok: false, violations } : { ok: true, params: out };
    },
  };
}
