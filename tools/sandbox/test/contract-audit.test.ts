import { ProblemSchema } from '@dq/core/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/index.js';
import { FAULT_GROUPS, type FaultGroup } from '../src/config.js';
import { BERLIN, call, type CallOptions } from './support/http.js';

// Rules of docs/platform-contract.md where the sandbox answered looser or in another shape than
// the platform, one row per rule, each over real HTTP with plain fetch.
const KEY = 'audit-key-0001';
const DOCS = 'https://docs.example.invalid';

/** One request per fault group; faults come before authentication, so no session is needed. */
const REQUESTS: Readonly<Record<FaultGroup, { path: string; opts: CallOptions; envelope: 'problem' | 'company' }>> = {
  validate: { path: '/location/v1/validate', opts: { json: BERLIN, bearer: KEY }, envelope: 'problem' },
  batch: { path: '/location/v1/validate/batch/sync', opts: { json: { ...BERLIN, customerAddressId: 'r1' }, bearer: KEY }, envelope: 'problem' },
  'start-session': { path: '/location/v1/start-session', opts: { json: { country: 'DE' }, bearer: KEY }, envelope: 'problem' },
  autocomplete: { path: '/location/v1/autocomplete', opts: { json: { country: 'DE', query: 'Unter' } }, envelope: 'problem' },
  company: { path: '/companies/v2', opts: { json: { company: 'Müller' }, bearer: KEY }, envelope: 'company' },
  phone: { path: '/rest/describe/phone_number_analysis/analyse_phone', opts: { bearer: KEY }, envelope: 'company' },
  download: { path: '/download/v1/data/post/version.txt', opts: { bearer: KEY }, envelope: 'problem' },
};

describe('contract 7.1 and 8: a 429 always carries Retry-After in seconds, an injected one too', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    // Every group answers 429 and none sets retryAfterSeconds.
    const faults = Object.fromEntries(FAULT_GROUPS.map((g) => [g, { errorRate: 1, errorStatuses: [429] }]));
    sb = await startSandbox({ config: { accounts: [{ id: 'audit', apiKeys: [KEY] }], faults } });
  });
  afterAll(() => sb.close());

  it.each(FAULT_GROUPS.map((group) => ({ group, ...REQUESTS[group] })))(
    '$group: an injected 429 without retryAfterSeconds sends Retry-After: 1 and its error body',
    async ({ path, opts, envelope }) => {
      const r = await call(sb.url, path, opts);
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('1');
      if (envelope === 'problem') expect(ProblemSchema.parse(r.body).type).toMatch(new RegExp(`^${DOCS}/(location|download)/problems#too-many-requests$`));
      else expect(r.body).toMatchObject({ status: 429, error: 'Too Many Requests', path });
    },
  );

  it('an injected 500 or 503 still carries no Retry-After unless retryAfterSeconds is set', async () => {
    sb.setFaults({ validate: { errorRate: 1, errorStatuses: [503] }, batch: { errorRate: 1, errorStatuses: [429], retryAfterSeconds: 0 } });
    const unavailable = await call(sb.url, '/location/v1/validate', { json: BERLIN, bearer: KEY });
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after')).toBeNull();
    const configured = await call(sb.url, '/location/v1/validate/batch/sync', { json: { ...BERLIN, customerAddressId: 'r1' }, bearer: KEY });
    expect(configured.status).toBe(429);
    expect(configured.headers.get('retry-after')).toBe('0');
  });
});
