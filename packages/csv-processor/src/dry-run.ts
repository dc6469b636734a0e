import { createEngine, type Engine, type EngineRecord, type Mode } from '@dq/core';
import { openStore } from '@dq/core/store';
import { inferFieldMap, recordMapper } from './mapping.js';
import type { ProcessFileOptions, RunPaths } from './options.js';
import { refuseResultKeys, resultColumns } from './sink/result-columns.js';
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
  /** Distinct inputs the result store answers (younger than --max-age). */
  readonly fromStore: number;
  /** API calls a run would make (one per distinct input the store does not answer). */
  readonly calls: number;
  /** Endpoint the calls go to. */
  readonly endpoint: 'batch' | 'validate' | 'company';
  /** Set when a stop signal ended the dry run before the end of the file: the reason (main.ts). */
  readonly interrupted?: unknown;
  /** Requests per second that endpoint allows; undefined when the contract does not say. */
  readonly rateLimitPerSecond?: number;
  /** calls ÷ rate limit, in seconds. */
  readonly secondsAtRateLimit?: number;
}

/** Contract part 8: requests per second per endpoint (company: not shown). */
const CONTRACT_LIMITS = { batch: 100, validate: 30 } as const;

/** Records planned per engine call: bounds the memory of one step and the store's lookups. */
const PLAN_BATCH = 5_000;

/**
 * Reads and checks the whole file like a run would: parses every record (rejects counted), and
 * has the engine plan each batch of rows (local checks, distinct inputs by the engine's own key,
 * and the inputs the result store would answer), so the calls counted are the calls a run would
 * make after the store. Nothing is called; the distinct keys are held in memory (about 150 MB per
 * million distinct rows).
 */
export async function planFile(options: ProcessFileOptions & { format: InputFormat; mode: Mode; delimiter: string }, paths: RunPaths): Promise<DryRunPlan> {
  const source = await openSource({ path: paths.input, format: options.format, encoding: options.encoding, delimiter: options.delimiter });
  const totals = emptyTotals();
  totals.runs = 1;
  const started = performance.now(); // monotonic
  const seen = new Set<string>();
  let invalidInput = 0;
  let distinct = 0;
  let calls = 0;
  let fromStore = 0;
  let interrupted: unknown;
  const { store, maxAgeMs, ...engineSettings } = options.engine ?? {};
  let engine: Engine | undefined;
  try {
    const map = options.map ?? inferFieldMap(options.mode, source.header, options.onHint ?? ((text) => options.logger?.warn(text)));
    const toRecord = recordMapper(map, source.header);
    const resultStore = await openStore(store, { maxAgeMs });
    // Planning never calls: the URL and key are placeholders when a dry run is given none, and
    // with no thread the engine starts no worker.
    engine = createEngine({
      ...engineSettings,
      threads: 0,
      mode: options.mode,
      baseUrl: options.baseUrl ?? 'http://dry-run.invalid',
      apiKey: options.apiKey ?? 'dry-run',
      defaultCountry: options.country,
      include: options.include,
      resultStore,
    });
    let batch: EngineRecord[] = [];
    const plan = async (): Promise<void> => {
      const p = await engine!.plan(batch, { seen });
      invalidInput += p.invalidInput;
      distinct += p.distinct;
      calls += p.calls;
      fromStore += p.fromStore;
      batch = [];
    };
    const names = resultColumns(options.mode, options.include).names;
    for await (const read of source.items) {
      const item = refuseResultKeys(read, names);
      if (item.kind === 'reject') {
        totals.rejects += 1;
        continue;
      }
      totals.rows += 1;
      batch.push(toRecord(item));
      if (batch.length >= PLAN_BATCH) {
        await plan();
        // A stop signal ends a dry run at once: it has nothing under way to finish.
        const asked = options.stop?.aborted ? options.stop : options.signal?.aborted ? options.signal : undefined;
        if (asked) {
          interrupted = asked.reason ?? new Error('interrupted');
          break;
        }
      }
    }
    await plan();
  } finally {
    await engine?.close();
    await source.close();
  }
  totals.durationMs = Math.round(performance.now() - started);
  const endpoint = options.mode === 'address' ? (options.engine?.addressEndpoint ?? 'batch') : 'company';
  const limit = endpoint === 'company' ? options.engine?.rateLimits?.company : (options.engine?.rateLimits?.[endpoint] ?? CONTRACT_LIMITS[endpoint]);
  return {
    totals,
    invalidInput,
    distinct,
    fromStore,
    calls,
    endpoint,
    ...(interrupted !== undefined ? { interrupted } : {}),
    ...(limit ? { rateLimitPerSecond: limit, secondsAtRateLimit: Math.ceil(calls / limit) } : {}),
  };
}
