import { FAULT_GROUPS, faultsSchema, type FaultGroup, type FaultSpec, type FaultsConfig } from './config.js';
import { mulberry32, seedFor } from './prng.js';

/** What fault injection decided for one request. */
export type FaultDecision =
  | { kind: 'none'; latencyMs: number }
  | { kind: 'error'; status: number; latencyMs: number; retryAfterSeconds?: number }
  | { kind: 'reset'; latencyMs: number }
  | { kind: 'truncate'; latencyMs: number };

const NONE: FaultDecision = { kind: 'none', latencyMs: 0 };

/** `Retry-After` (seconds) of an injected 429 whose group sets no `retryAfterSeconds`: the rate limiter's shortest. */
const INJECTED_429_RETRY_AFTER = 1;

/**
 * Per-group fault injection. Each group draws from its own PRNG seeded with (seed, group), so the
 * n-th request of a group gets the same fault for the same seed and settings, whatever the traffic
 * of other groups. Changing the settings restarts the affected groups' sequences.
 */
export class FaultInjector {
  readonly #seed: number;
  #specs: FaultsConfig = {};
  readonly #rngs = new Map<FaultGroup, () => number>();

  constructor(seed: number, initial: FaultsConfig) {
    this.#seed = seed;
    this.set(initial);
  }

  /** Replaces the whole fault configuration and restarts every group's sequence. */
  set(specs: FaultsConfig): void {
    this.#specs = { ...specs };
    this.#rngs.clear();
    for (const g of FAULT_GROUPS) this.#rngs.set(g, mulberry32(seedFor(this.#seed, g)));
  }

  /** The current configuration (groups without faults are absent). */
  get(): FaultsConfig {
    return structuredClone(this.#specs);
  }

  /** Decides the fault for the next request of `group`; draws exactly two numbers when the group is configured. */
  decide(group: FaultGroup): FaultDecision {
    const spec: FaultSpec | undefined = this.#specs[group];
    if (spec === undefined) return NONE;
    const rng = this.#rngs.get(group) as () => number;
    const r = rng();
    const pick = rng();
    const latencyMs = spec.latencyMs;
    if (r < spec.resetRate) return { kind: 'reset', latencyMs };
    if (r < spec.resetRate + spec.errorRate) {
      const status = spec.errorStatuses[Math.floor(pick * spec.errorStatuses.length)] ?? 500;
      // A 429 always carries Retry-After (docs/platform-contract.md 7.1), an injected one too.
      const retryAfterSeconds = spec.retryAfterSeconds ?? (status === 429 ? INJECTED_429_RETRY_AFTER : undefined);
      return retryAfterSeconds === undefined ? { kind: 'error', status, latencyMs } : { kind: 'error', status, latencyMs, retryAfterSeconds };
    }
    if (r < spec.resetRate + spec.errorRate + spec.truncateRate) return { kind: 'truncate', latencyMs };
    return { kind: 'none', latencyMs };
  }
}

/** Parses a fault configuration (admin endpoint or config file); throws the zod error on bad input. */
export function parseFaults(input: unknown): FaultsConfig {
  return faultsSchema.parse(input);
}
