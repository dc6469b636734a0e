import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { SandboxError } from './errors.js';
import { SESSION_TOKEN_PREFIX } from './sessions.js';

/** API products a plan can include; a call to a product outside the plan gets 403 service-disabled. */
export const SERVICES = ['address', 'autocomplete', 'company', 'phone', 'download'] as const;
export type Service = (typeof SERVICES)[number];

/**
 * Switches inside the address products that an account can have turned off (403 feature-disabled),
 * e.g. autocomplete on a validation-only plan.
 */
export const FEATURES = ['validate', 'batch', 'sessions', 'autocomplete'] as const;
export type Feature = (typeof FEATURES)[number];

/** Endpoints with a per-account rate limit (requests per second). */
export const RATE_LIMITED = ['validate', 'batch', 'start-session', 'autocomplete', 'company', 'phone', 'download'] as const;
export type RateLimitedEndpoint = (typeof RATE_LIMITED)[number];

/** Endpoint groups that faults can be injected into. */
export const FAULT_GROUPS = RATE_LIMITED;
export type FaultGroup = RateLimitedEndpoint;

/** Contract part 8; company, phone and download are not shown there, so they are off by default. */
export const CONTRACT_RATE_LIMITS: Readonly<Record<RateLimitedEndpoint, number>> = {
  validate: 30,
  batch: 100,
  'start-session': 30,
  autocomplete: 60,
  company: 0,
  phone: 0,
  download: 0,
};

/** The API key of the default account (used when no config is given). */
export const DEFAULT_API_KEY = 'dq-sandbox-key';

const rate = z.number().min(0).max(100_000).nullable();

const faultSpecSchema = z.strictObject({
  /** Share of requests (0–1) answered with one of errorStatuses. */
  errorRate: z.number().min(0).max(1).default(0),
  errorStatuses: z
    .array(z.union([z.literal(429), z.literal(500), z.literal(502), z.literal(503), z.literal(504)]))
    .min(1)
    .default([500, 503]),
  /** `Retry-After` (seconds) sent with every injected error; none when absent. */
  retryAfterSeconds: z.number().int().min(0).max(86_400).optional(),
  /** Share of requests (0–1) whose connection is reset before any response. */
  resetRate: z.number().min(0).max(1).default(0),
  /** Share of requests (0–1) whose body is cut short (Content-Length promises more). */
  truncateRate: z.number().min(0).max(1).default(0),
  /** Delay before every response of the group, in milliseconds. */
  latencyMs: z.number().int().min(0).max(600_000).default(0),
});
export type FaultSpec = z.output<typeof faultSpecSchema>;
export type FaultSpecInput = z.input<typeof faultSpecSchema>;

export const faultsSchema = z
  .strictObject(Object.fromEntries(FAULT_GROUPS.map((g) => [g, faultSpecSchema.optional()])) as Record<FaultGroup, z.ZodOptional<typeof faultSpecSchema>>)
  .refine((f) => Object.values(f).every((s) => s === undefined || s.errorRate + s.resetRate + s.truncateRate <= 1), {
    message: 'errorRate + resetRate + truncateRate must not exceed 1',
  });
export type FaultsConfig = Partial<Record<FaultGroup, FaultSpec>>;
export type FaultsInput = Partial<Record<FaultGroup, FaultSpecInput>>;

const accountSchema = z.strictObject({
  id: z
    .string()
    .min(1)
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only'),
  /** One or two API keys (the platform allows two so that keys can be rotated). */
  apiKeys: z
    .array(
      z
        .string()
        .min(8, 'an API key has at least 8 characters')
        .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
        .refine((k) => !k.startsWith(SESSION_TOKEN_PREFIX), `the prefix "${SESSION_TOKEN_PREFIX}" is reserved for session tokens`),
    )
    .min(1)
    .max(2),
  enabled: z.boolean().default(true),
  services: z.array(z.enum(SERVICES)).default([...SERVICES]),
  features: z.array(z.enum(FEATURES)).default([...FEATURES]),
  plan: z
    .strictObject({
      /** Billable requests in the prepaid plan; null = unlimited. */
      quota: z.number().int().min(0).nullable().default(null),
      /** End of the plan period (ISO 8601); null = no end. */
      validUntil: z.iso.datetime({ offset: true }).nullable().default(null),
    })
    .default({ quota: null, validUntil: null }),
  /** Domains allowed in an Origin header ("shop.example.com", "*.example.com" or a full origin); null = any. */
  origins: z.array(z.string().min(1)).nullable().default(null),
  /** Requests per second per endpoint; 0 or null switches the limit off. Missing ones take the contract's. */
  rateLimits: z
    .strictObject(Object.fromEntries(RATE_LIMITED.map((e) => [e, rate.optional()])) as Record<RateLimitedEndpoint, z.ZodOptional<typeof rate>>)
    .default({}),
  /** Lifetime of a session token in seconds (fractions allowed, for tests). */
  sessionLifetimeSeconds: z.number().positive().default(180),
});

export const sandboxConfigSchema = z
  .strictObject({
    accounts: z.array(accountSchema).min(1),
    /** Host that problem type URIs point to. */
    docsUrl: z.url().default('https://docs.example.invalid'),
    /** File that quota warnings are appended to, one JSON line each; null = log event only. */
    outbox: z.string().min(1).nullable().default(null),
    faults: faultsSchema.default({}),
    /**
     * Requests accepted above each rate limit in any sliding second. 0 (default): exactly `limit`
     * per second, as strict as the platform; a positive value forgives that many extra.
     */
    rateLimitSlack: z.number().int().min(0).max(1000).default(0),
    /** Options for the download store (see the download module). */
    download: z.record(z.string(), z.unknown()).default({}),
  })
  .superRefine((cfg, ctx) => {
    const seen = new Map<string, string>();
    cfg.accounts.forEach((a, i) => {
      a.apiKeys.forEach((k, j) => {
        const owner = seen.get(k);
        if (owner !== undefined) ctx.addIssue({ code: 'custom', path: ['accounts', i, 'apiKeys', j], message: `API key already used by account "${owner}"` });
        seen.set(k, a.id);
      });
    });
    const ids = cfg.accounts.map((a) => a.id);
    ids.forEach((id, i) => {
      if (ids.indexOf(id) !== i) ctx.addIssue({ code: 'custom', path: ['accounts', i, 'id'], message: `duplicate account id "${id}"` });
    });
  });

/** The accounts config as written in a file (defaults not yet applied). */
export type SandboxConfig = z.input<typeof sandboxConfigSchema>;
/** The accounts config with every default filled in. */
export type ResolvedConfig = z.output<typeof sandboxConfigSchema>;
export type AccountConfig = ResolvedConfig['accounts'][number];

/** One account, key `dq-sandbox-key`, everything enabled, contract limits, a large quota. */
export function defaultConfig(): SandboxConfig {
  return {
    accounts: [{ id: 'sandbox', apiKeys: [DEFAULT_API_KEY], plan: { quota: 1_000_000_000, validUntil: null } }],
  };
}

/** Validates a config object; throws SandboxError `config-invalid` naming every bad field. */
export function parseConfig(input: unknown, source = 'config'): ResolvedConfig {
  const parsed = sandboxConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((i) => `  ${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`);
  throw new SandboxError('config-invalid', `${source} is not a valid sandbox config:\n${lines.join('\n')}`);
}

/** Reads and validates a JSON config file; errors name the file and the field. */
export async function loadConfigFile(path: string): Promise<ResolvedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new SandboxError('config-unreadable', `cannot read config file ${path}: ${(cause as Error).message}`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new SandboxError('config-invalid', `config file ${path} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  return parseConfig(json, `config file ${path}`);
}

/** Rate limit of an endpoint for an account in requests per second; 0 = off. */
export function rateLimitOf(account: AccountConfig, endpoint: RateLimitedEndpoint): number {
  const configured = account.rateLimits[endpoint];
  if (configured === undefined) return CONTRACT_RATE_LIMITS[endpoint];
  return configured ?? 0;
}
