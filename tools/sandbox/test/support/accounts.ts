import type { SandboxConfig } from '../../src/index.js';

/** API keys of the test accounts, one per 401/403 row of contract 7.1 and 7.2. */
export const KEYS = {
  main: 'main-key-0001',
  mainSecond: 'main-key-0002',
  disabled: 'disabled-key-01',
  companyOnly: 'company-only-key',
  addressOnly: 'address-only-key',
  noAutocompleteFeature: 'no-ac-feature-key',
  expired: 'expired-plan-key',
  smallQuota: 'small-quota-key1',
  shortSession: 'short-session-key',
  restrictedOrigin: 'origin-bound-key',
} as const;

/** Quota of the `small-quota` account. */
export const SMALL_QUOTA = 4;

/** Accounts that make every 401/403 row of 7.1 and 7.2 reachable. */
export function contractAccounts(outbox: string | null = null): SandboxConfig {
  return {
    outbox,
    accounts: [
      { id: 'main', apiKeys: [KEYS.main, KEYS.mainSecond], plan: { quota: 1_000_000 } },
      { id: 'disabled', apiKeys: [KEYS.disabled], enabled: false },
      { id: 'company-only', apiKeys: [KEYS.companyOnly], services: ['company'] },
      { id: 'address-only', apiKeys: [KEYS.addressOnly], services: ['address'] },
      { id: 'no-ac-feature', apiKeys: [KEYS.noAutocompleteFeature], features: ['validate', 'batch', 'sessions'] },
      { id: 'expired', apiKeys: [KEYS.expired], plan: { quota: 1000, validUntil: '2020-01-31T23:59:59Z' } },
      { id: 'small-quota', apiKeys: [KEYS.smallQuota], plan: { quota: SMALL_QUOTA } },
      { id: 'short-session', apiKeys: [KEYS.shortSession], sessionLifetimeSeconds: 0.3 },
      { id: 'origin-bound', apiKeys: [KEYS.restrictedOrigin], origins: ['shop.example.com', '*.example.org'] },
    ],
  };
}
