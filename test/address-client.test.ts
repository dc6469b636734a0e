import { AddressClient, ADDRESS_PATHS, PlatformError, RetriesExhaustedError } from '@dq/core';
import type { AddressRequest, Transport } from '@dq/core';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineOn, knownAddresses, requestsTo, sandboxWith, transportOn } from '@dq/test-support/platform';

let sandbox: Sandbox;
let transport: Transport;
let client: AddressClient;
const [home] = knownAddresses(1);
if (home === undefined) throw new Error('no known address');

/** The four input variants of one address (contract 2.1, rule 2: same result structure). */
const variants: Record<string, AddressRequest> = {
  'street, houseNumber, postalCode and locality': { ...home },
  'addressLine with postalCode and locality': {
    country: home.country,
    addressLine: `${home.street} ${home.houseNumber}`,
    postalCode: home.postalCode,
    locality: home.locality,
  },
  'street and houseNumber with localityLine': {
    country: home.country,
    street: home.street,
    houseNumber: home.houseNumber,
    localityLine: `${home.postalCode} ${home.locality}`,
  },
  'addressLine with localityLine': {
    country: home.country,
    addressLine: `${home.street} ${home.houseNumber}`,
    localityLine: `${home.postalCode} ${home.locality}`,
  },
};
const truth = { addressType: 'delivery', ...home };
const requestIdShape = /^\S{8,}$/;

beforeAll(async () => {
  sandbox = await sandboxWith();
  transport = transportOn(sandbox, { retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 } });
  client = new AddressClient(transport);
});
afterAll(async () => {
  await transport.close();
  await sandbox.close();
});

describe('AddressClient against the sandbox', () => {
  for (const [n, [name, request]] of Object.entries(variants).entries()) {
    it(`validates ${name} as class A with the true address and a request id`, async () => {
      const res = await client.validate(request);
      expect(res.status).toBe(200);
      expect(res.requestId).toMatch(requestIdShape);
      expect(res.data.resultClass).toBe('A');
      expect(res.data.results).toHaveLength(1);
      expect(res.data.results[0]).toMatchObject(truth);
    });

    it(`batch-validates ${name} and gets its customerAddressId echoed`, async () => {
      const id = `row-${n}`;
      const res = await client.batchSync(request, id);
      expect(res.data.customerAddressId).toBe(id);
      expect(res.data.resultClass).toBe('A');
      expect(res.data.results[0]).toMatchObject(truth);
    });
  }

  it('parses coordinates and per-field metadata when both are requested', async () => {
    const res = await client.batchSync({ ...home, _options: { include: ['coordinates-wgs84', 'metadata'] } }, 'with-extras');
    const best = res.data.results[0];
    expect(best?.coordinates?.wgs84.precision).toBe('house-number');
    expect(best?.coordinates?.wgs84.lat).toBeGreaterThan(46);
    expect(best?.coordinates?.wgs84.lat).toBeLessThan(56);
    expect(best?.coordinates?.wgs84.lon).toBeGreaterThan(5);
    expect(best?.coordinates?.wgs84.lon).toBeLessThan(16);
    expect(best?._meta?.fields?.['street']).toMatchObject({ status: 'IDENTIFIED' });
    expect(best?._meta?.fields?.['postalCode']).toMatchObject({ status: 'IDENTIFIED' });
  });

  it('leaves coordinates and metadata out when they were not requested', async () => {
    const res = await client.validate(home);
    expect(res.data.results[0]?.coordinates).toBeUndefined();
    expect(res.data.results[0]?._meta).toBeUndefined();
  });

  it('corrects a wrong postal code from street and house number (class C)', async () => {
    const wrongCode = String((Number(home.postalCode) + 3) % 100_000).padStart(5, '0');
    const res = await client.validate({ ...home, postalCode: wrongCode });
    expect(res.data.resultClass).toBe('C');
    expect(res.data.results[0]?.postalCode).toBe(home.postalCode);
  });

  it('decodes a 400 the server alone catches (no country) to field-error with violations and request id', async () => {
    const { country: _omitted, ...withoutCountry } = home;
    const error = await client.validate(withoutCountry).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformError);
    const e = error as PlatformError;
    expect(e.code).toBe('field-error');
    expect(e.status).toBe(400);
    expect(e.scope).toBe('record');
    expect(e.requestId).toMatch(requestIdShape);
    expect(e.violations?.map((v) => v.fieldName)).toContain('country');
    expect(e.message).toContain(e.requestId as string);
  });

  it('decodes the localityIdentificationSet 400 when local validation is bypassed, sending the request once', async () => {
    const before = requestsTo(sandbox, 'validate');
    const error = await transport
      .request({ endpoint: 'validate', method: 'POST', path: ADDRESS_PATHS.validate, body: { country: 'DE', street: home.street } })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'field-error', status: 400, violations: [expect.objectContaining({ fieldName: 'localityIdentificationSet' })] });
    expect((error as PlatformError).requestId).toMatch(requestIdShape);
    expect(requestsTo(sandbox, 'validate') - before).toBe(1);
  });

  it('takes 500 country-not-available as the answer for that record: sent once, never repeated', async () => {
    const before = requestsTo(sandbox, 'validate');
    const error = await client.validate({ ...home, country: 'FR' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).not.toBeInstanceOf(RetriesExhaustedError);
    expect(error).toMatchObject({ code: 'country-not-available', status: 500, retriable: false, scope: 'record' });
    expect((error as PlatformError).requestId).toMatch(requestIdShape);
    expect((error as PlatformError).message).toContain('no reference data for this country');
    expect(requestsTo(sandbox, 'validate') - before).toBe(1);
  });

  it('turns the server-only 400 into invalid-input and country-not-available into unsupported-country in an engine run', async () => {
    const engine = engineOn(sandbox, { threads: 1, retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 } });
    try {
      const { country: _omitted, ...withoutCountry } = home;
      const before = requestsTo(sandbox, 'batch');
      const results = await engine.process([{ ...home }, { ...home, country: 'FR' }, withoutCountry]);
      expect(results[0]).toMatchObject({ status: 'accepted', resultClass: 'A' });
      expect(results[1]).toMatchObject({ status: 'unsupported-country', error: { code: 'country-not-available' } });
      expect(results[1]?.requestId).toMatch(requestIdShape);
      expect(results[2]).toMatchObject({
        status: 'invalid-input',
        source: 'api',
        error: { code: 'field-error', violations: [expect.objectContaining({ fieldName: 'country' })] },
      });
      expect(results[2]?.requestId).toMatch(requestIdShape);
      // One call per record: the unsupported country was not repeated, and is no platform failure.
      expect(requestsTo(sandbox, 'batch') - before).toBe(3);
      const report = engine.report();
      expect(report.retries).toBe(0);
      expect(report.failures).toEqual([]);
      expect(report.byStatus).toMatchObject({ accepted: 1, 'unsupported-country': 1, 'invalid-input': 1, unavailable: 0 });
    } finally {
      await engine.close();
    }
  });
});
