import { createHash } from 'node:crypto';
import { mapRecord, validateAddressRequest, validateCompanyBody, type Mode } from '@dq/core';
import { inferFieldMap, recordMapper } from './mapping.js';
import type { ProcessFileOptions, RunPaths } from './options.js';
import { openSource } from './source/index.js';
import type { InputFormat } from './source/types.js';
import { emptyTotals, type RunTotals } from './totals.js';

/** What a run would cost, from reading the whole file without calling anything. */
export interface DryRunPlan {
  /** Rows and rejects as a run would count them (statuses stay zero). */
  readonly totals: RunTotals;
  /** Rows that local checks would refuse (invalid-input, no call). */
  readonly invalidInput: number;
  /** Distinct normalised inputs among the other rows. */
  readonly distinct: number;
  /** API calls a run would make (one per distinct input). */
  readonly calls: number;
  /** Endpoint the calls go to. */
  readonly endpoint: 'batch' | 'validate' | 'company';
  /** Requests per second that endpoint allows; undefined when the contract does not say. */
  readonly rateLimitPerSecond?: number;
  /** calls ÷ rate limit, in seconds. */
  readonly secondsAtRateLimit?: number;
}

/** Contract part 8: requests per second per endpoint (company: not shown). */
const CONTRACT_LIMITS = { batch: 100, validate: 30 } as const;

/**
 * Reads and checks the whole file like a run would: parses every record (rejects counted),
 * maps and locally validates each row, and counts distinct inputs as the engine's dedup would
 * (whitespace and case folded). Distinct keys are held as 16-byte digests: about 70 MB per million
 * distinct rows.
 */
export async function planFile(
  options: ProcessFileOptions & { format: InputFormat; mode: Mode; delimiter: string },
  paths: RunPaths,
): Promise<DryRunPlan> {
  const source = await openSource({ path: paths.input, format: options.format, encoding: options.encoding, delimiter: options.delimiter });
  const totals = emptyTotals();
  totals.runs = 1;
  const started = Date.now();
  const seen = new Set<string>();
  let invalidInput = 0;
  try {
    const map = options.map ?? inferFieldMap(options.mode, source.header);
    const toRecord = recordMapper(map, source.header);
    for await (const item of source.items) {
      if (item.kind === 'reject') {
        totals.rejects += 1;
        continue;
      }
      totals.rows += 1;
      const fields = mapRecord(options.mode, toRecord(item), options.country);
      const violations = options.mode === 'address' ? validateAddressRequest(fields) : validateCompanyBody(options.mode, fields);
      if (violations.length > 0) {
        invalidInput += 1;
        continue;
      }
      const key = Object.keys(fields).sort().map((k) => `${k}=${fields[k]!.replace(/\s+/g, ' ').toLowerCase()}`).join('\u0000');
      seen.add(createHash('sha256').update(key).digest('base64').slice(0, 22));
    }
  } finally {
    await source.close();
  }
  totals.durationMs = Date.now() - started;
  const endpoint = options.mode === 'address' ? (options.engine?.addressEndpoint ?? 'batch') : 'company';
  const limit = endpoint === 'company' ? options.engine?.rateLimits?.company : (options.engine?.rateLimits?.[endpoint] ?? CONTRACT_LIMITS[endpoint]);
  const calls = seen.size;
  return {
    totals,
    invalidInput,
    distinct: seen.size,
    calls,
    endpoint,
    ...(limit ? { rateLimitPerSecond: limit, secondsAtRateLimit: Math.ceil(calls / limit) } : {}),
  };
}
