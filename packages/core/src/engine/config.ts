import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { apiKeyProblem } from '../transport/api-key.js';
import { DqError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import {
  ADDRESS_ENDPOINTS,
  ADDRESS_INCLUDE_VALUES,
  CountryCodeSchema,
  MODES,
  POLICY_STATUSES,
  RESULT_CLASSES,
  validateCompanyQuery,
} from '../schemas/index.js';
import { accountOf } from '../throttle/index.js';
import type { EndpointId } from '../throttle/index.js';
import type { RetryOptions } from '../transport/index.js';
import type { ResultStore } from '../store/types.js';
import { resolvePolicy } from './policy.js';
import type { AddressEndpoint, CompanySearchOptions, Mode, PolicyStatus, ResultCache, ResultClass } from './types.js';

/** Retry bounds handed to each worker's transport: numbers only, since they cross the thread boundary. */
export type EngineRetryOptions = Partial<Omit<RetryOptions, 'random'>>;

/** Configuration of {@link createEngine}; checked when the engine is created. */
export interface EngineConfig {
  /** What each record is checked against: address validation, company search, register search, VAT check. */
  mode: Mode;
  /** Address API host, e.g. `https://api.example.com` (paths `/location/v1/...` are appended). */
  baseUrl: string;
  /** Real-time services host for company, tr and vat modes (`/companies/v2`); default `baseUrl`. */
  realtimeUrl?: string;
  /** Sent as `Authorization: Bearer`; never logged or put in an error message. */
  apiKey: string;
  /** Country for address records without one (two upper-case letters). */
  defaultCountry?: string;
  /** Address `_options.include` values (contract 2.1, docs/platform-contract.md). */
  include?: string[];
  /** Address endpoint; default `batch` (batch/sync is the bulk endpoint, docs/platform-contract.md). */
  addressEndpoint?: AddressEndpoint;
  /** Status per result class; default A, B, C accepted; D, E review; F invalid. */
  policy?: Partial<Record<ResultClass, PolicyStatus>>;
  /**
   * Worker threads of the pool; 0 makes the calls on the engine's own thread, with no messaging.
   * Default {@link defaultThreads}.
   */
  threads?: number;
  /** HTTP calls in flight across the pool; default 32. */
  concurrency?: number;
  /** Requests per second per endpoint, shared by all workers; 0 = unlimited; default the contract's limits. */
  rateLimits?: Partial<Record<EndpointId, number>>;
  /**
   * Where the rate budget lives: `postgres://…` shares it (a table `dq_throttle` in that database)
   * with every process and machine of the account; undefined or `off`: this process's own budget.
   */
  budget?: string;
  /** The account a shared budget belongs to; default a digest of the API key and base URL (the key is never stored). */
  account?: string;
  /** Spending cap: most billable calls this engine sends (retries included); the call past it stops the run with `max-calls-reached` (exit 5). 0 or undefined: no cap. */
  maxCalls?: number;
  /** Result cache of this run; default an in-memory LRU of 100 000 entries ({@link createMemoryCache}). */
  cache?: ResultCache;
  /**
   * The result store, asked (once per batch) for inputs the cache does not hold, and written with
   * every definitive answer before it is used; its answers have source `store`. Closed by the
   * engine. Default none (see `openStore`).
   */
  resultStore?: ResultStore;
  /** Company search options (company and tr modes). */
  company?: CompanySearchOptions;
  /** Per-request timeout in milliseconds; default 30 000. */
  timeoutMs?: number;
  /** Retry bounds of the transport; default the transport's. */
  retry?: EngineRetryOptions;
  /** Where the engine logs; default a JSON-lines logger on stderr at level `info`. */
  logger?: Logger;
  /** Failures listed in the run report; default 100. */
  maxReportedFailures?: number;
}

/** {@link EngineConfig} with defaults filled in. */
export interface ResolvedEngineConfig {
  mode: Mode;
  baseUrl: string;
  realtimeUrl: string;
  apiKey: string;
  defaultCountry: string | undefined;
  include: string[] | undefined;
  addressEndpoint: AddressEndpoint;
  policy: Record<ResultClass, PolicyStatus>;
  threads: number;
  concurrency: number;
  rateLimits: Partial<Record<EndpointId, number>>;
  /** Postgres URL of the shared rate budget; undefined: this process's own. */
  budget: string | undefined;
  /** The account of the shared budget (given, or a digest of key and base URL). */
  account: string;
  /** Spending cap in billable calls; 0: none. */
  maxCalls: number;
  company: CompanySearchOptions;
  timeoutMs: number;
  retry: EngineRetryOptions | undefined;
  maxReportedFailures: number;
}

const status = z.enum(POLICY_STATUSES);
const positiveInt = (max: number) => z.number().int().min(1).max(max);
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

const ConfigSchema = z.object({
  mode: z.enum(MODES),
  baseUrl: httpUrl,
  realtimeUrl: httpUrl.optional(),
  apiKey: z
    .string({ error: 'the API key is missing: set DQ_API_KEY (or --api-key)' })
    .min(1, { error: 'the API key is empty: set DQ_API_KEY (or --api-key)' })
    .superRefine((key, ctx) => {
      const problem = apiKeyProblem(key);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    }),
  defaultCountry: CountryCodeSchema.optional(),
  include: z.array(z.enum(ADDRESS_INCLUDE_VALUES)).optional(),
  addressEndpoint: z.enum(ADDRESS_ENDPOINTS).default('batch'),
  policy: z.partialRecord(z.enum(RESULT_CLASSES), status).optional(),
  threads: z
    .number()
    .int()
    .min(0)
    .max(64)
    .default(() => defaultThreads()),
  concurrency: positiveInt(4096).default(32),
  rateLimits: z.partialRecord(z.enum(['validate', 'batch', 'start-session', 'autocomplete', 'company', 'phone', 'download']), z.number().min(0)).default({}),
  budget: z
    .string()
    .refine((v) => v === 'off' || /^postgres(ql)?:\/\/./.test(v), { error: 'must be a postgres:// URL or off' })
    .optional(),
  account: z.string().min(1).max(200).optional(),
  maxCalls: z.number().int().min(0).default(0),
  company: z
    .object({
      minScore: z.number().optional(),
      limit: z.number().optional(),
      lang: z.string().optional(),
      includeDeleted: z.boolean().optional(),
    })
    .default({}),
  timeoutMs: positiveInt(600_000).default(30_000),
  maxReportedFailures: z.number().int().min(0).default(100),
  retry: z
    .object({
      maxAttempts: positiveInt(100).optional(),
      maxTotalMs: z.number().min(0).optional(),
      baseDelayMs: z.number().min(0).optional(),
      maxDelayMs: z.number().min(0).optional(),
      maxRetryAfterMs: z.number().min(0).optional(),
    })
    .optional(),
});

/**
 * Default size of the engine's worker pool: one thread per core beyond the first, and none (calls
 * on the engine's own thread) on a machine of one or two cores. Measured in tools/bench on two
 * cores: a worker saves no CPU there (the records and results cross the thread boundary both
 * ways), costs ~250 ms of start-up and ~60 MB of memory, and a second one only competes with the
 * main thread for the cores.
 */
export function defaultThreads(): number {
  const cores = availableParallelism();
  return cores <= 2 ? 0 : cores - 1;
}

/**
 * Checks `config` and fills defaults. Throws a `DqError` with code `config-invalid` (exit code 2)
 * naming every offending option; the API key is never echoed.
 */
export function resolveEngineConfig(config: EngineConfig): ResolvedEngineConfig {
  const parsed = ConfigSchema.safeParse(config);
  // The API key's problems are worded whole ("the API key …"): `apiKey: <word>` would read as a
  // credential to the log redactor, which hides the word after it.
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => (i.path.join('.') === 'apiKey' ? i.message : `${i.path.join('.') || '(config)'}: ${i.message}`));
  for (const v of validateCompanyQuery(config.company ?? {})) problems.push(`company.${v.fieldName}: ${v.message}`);
  if (!parsed.success || problems.length > 0) {
    throw new DqError(`invalid engine configuration: ${problems.join('; ')}`, {
      code: 'config-invalid',
      retriable: false,
    });
  }
  const c = parsed.data;
  return {
    mode: c.mode,
    baseUrl: c.baseUrl.replace(/\/+$/, ''),
    realtimeUrl: (c.realtimeUrl ?? c.baseUrl).replace(/\/+$/, ''),
    apiKey: c.apiKey,
    defaultCountry: c.defaultCountry,
    include: c.include,
    addressEndpoint: c.addressEndpoint,
    policy: { ...resolvePolicy(c.policy) },
    threads: c.threads,
    concurrency: Math.max(c.concurrency, c.threads),
    rateLimits: c.rateLimits,
    budget: c.budget === 'off' ? undefined : c.budget,
    account: c.account ?? accountOf(c.apiKey, c.baseUrl),
    maxCalls: c.maxCalls,
    company: c.company,
    timeoutMs: c.timeoutMs,
    retry: c.retry,
    maxReportedFailures: c.maxReportedFailures,
  };
}
