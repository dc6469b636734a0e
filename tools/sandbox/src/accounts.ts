import { appendFile } from 'node:fs/promises';
import type { AccountConfig, Feature, ResolvedConfig, Service } from './config.js';
import type { StatsRecorder } from './stats.js';

/** A structured log event; never carries an API key or a session token. */
export type SandboxLogEvent =
  | { event: 'listening'; url: string }
  | { event: 'quota-warning'; account: string; used: number; quota: number }
  | { event: 'outbox-failed'; account: string; outbox: string; message: string }
  | { event: 'handler-failed'; requestId: string; path: string; message: string }
  | { event: 'closed' };

/** Receives log events; the CLI writes them to stderr as JSON lines. */
export type SandboxLogger = (event: SandboxLogEvent) => void;

/** Why an account may not make a call (problem fragments of 7.1). */
export type AccountRefusal = 'account-disabled' | 'service-disabled' | 'feature-disabled' | 'quota-expired' | 'quota-exhausted';

/** An account with its live usage. */
export interface Account {
  readonly config: AccountConfig;
  /** Billable calls so far in this plan. */
  used: number;
  /** The 75 % warning was recorded already. */
  warned: boolean;
}

/** Share of the quota at which the warning notification is recorded (contract 6). */
export const QUOTA_WARNING_SHARE = 0.75;

/** Accounts by API key, plan usage and the 75 % quota warning. */
export class AccountRegistry {
  readonly #byKey = new Map<string, Account>();
  readonly #byId = new Map<string, Account>();
  readonly #stats: StatsRecorder;
  readonly #log: SandboxLogger;
  readonly #outbox: string | null;
  #outboxWrites: Promise<void> = Promise.resolve();

  constructor(config: ResolvedConfig, stats: StatsRecorder, log: SandboxLogger) {
    this.#stats = stats;
    this.#log = log;
    this.#outbox = config.outbox;
    for (const c of config.accounts) {
      const account: Account = { config: c, used: 0, warned: false };
      this.#byId.set(c.id, account);
      for (const key of c.apiKeys) this.#byKey.set(key, account);
    }
  }

  byKey(apiKey: string): Account | undefined {
    return this.#byKey.get(apiKey);
  }

  byId(id: string): Account | undefined {
    return this.#byId.get(id);
  }

  /**
   * Checks, in the order of 7.1's table, whether the account may use `service` (and `feature`).
   * A plan whose period has passed refuses every call, free ones (start-session, phone describe,
   * downloads) included; the quota only counts, and so only refuses, billable calls.
   */
  refusal(account: Account, service: Service, feature: Feature | null, billable: boolean, now = Date.now()): AccountRefusal | null {
    const c = account.config;
    if (!c.enabled) return 'account-disabled';
    if (!c.services.includes(service)) return 'service-disabled';
    if (feature !== null && !c.features.includes(feature)) return 'feature-disabled';
    if (c.plan.validUntil !== null && Date.parse(c.plan.validUntil) <= now) return 'quota-expired';
    if (billable && c.plan.quota !== null && account.used >= c.plan.quota) return 'quota-exhausted';
    return null;
  }

  /**
   * Counts one billable call, unless the quota was used up meanwhile (concurrent calls).
   * @returns false when the call must be refused with quota-exhausted.
   */
  bill(account: Account): boolean {
    const quota = account.config.plan.quota;
    if (quota !== null && account.used >= quota) return false;
    account.used += 1;
    this.#stats.billable(account.config.id);
    if (quota !== null && !account.warned && account.used >= quota * QUOTA_WARNING_SHARE) {
      account.warned = true;
      this.#warn(account, quota);
    }
    return true;
  }

  /** Forgets usage and warnings (admin reset). */
  resetUsage(): void {
    for (const a of this.#byId.values()) {
      a.used = 0;
      a.warned = false;
    }
  }

  /** Resolves once every outbox line written so far is on disk (for close and tests). */
  flush(): Promise<void> {
    return this.#outboxWrites;
  }

  #warn(account: Account, quota: number): void {
    const id = account.config.id;
    this.#stats.quotaWarning(id);
    this.#log({ event: 'quota-warning', account: id, used: account.used, quota });
    const outbox = this.#outbox;
    if (outbox === null) return;
    const line = `${JSON.stringify({
      type: 'quota-warning',
      at: new Date().toISOString(),
      account: id,
      used: account.used,
      quota,
      share: QUOTA_WARNING_SHARE,
      message: `Account ${id} has used ${account.used} of ${quota} requests of its prepaid plan.`,
    })}\n`;
    this.#outboxWrites = this.#outboxWrites.then(() =>
      appendFile(outbox, line).catch((err: Error) => this.#log({ event: 'outbox-failed', account: id, outbox, message: err.message })),
    );
  }
}

/**
 * True when an Origin header value is allowed by the account's whitelist. Entries are a host
 * (`shop.example.com`), a wildcard for subdomains (`*.example.com`) or a full origin
 * (`https://shop.example.com:8443`). A null whitelist allows every origin.
 */
export function originAllowed(account: Account, origin: string): boolean {
  const list = account.config.origins;
  if (list === null) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  const host = url.hostname.toLowerCase();
  return list.some((entry) => {
    const e = entry.toLowerCase();
    if (e.includes('://')) return e.replace(/\/+$/, '') === url.origin.toLowerCase();
    if (e.startsWith('*.')) return host.endsWith(e.slice(1)) && host.length > e.length - 1;
    return host === e;
  });
}
