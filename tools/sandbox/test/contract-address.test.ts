import { setTimeout as sleep } from 'node:timers/promises';
import { AddressResultSchema, AutocompleteResponseSchema, BatchResultSchema, ProblemSchema, StartSessionResponseSchema } from '@dq/core/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDirtyInputs, startSandbox, type Sandbox } from '../src/index.js';
import { contractAccounts, KEYS } from './support/accounts.js';
import { call, type Reply } from './support/http.js';

// Contract 7.1, row by row, against a running sandbox with plain fetch.
const DOCS = 'https://docs.example.invalid';
let sb: Sandbox;
const exact = generateDirtyInputs(300, { seed: 7 }).find(
  (c) => c.intendedClass === 'A' && c.input.country === 'DE' && c.input.street && c.input.houseNumber && c.input.postalCode && c.input.locality,
);
if (exact === undefined) throw new Error('the generator gave no class A input');
const address = exact.input;

function expectProblem(r: Reply, status: number, fragment: string): void {
  expect(r.status).toBe(status);
  expect(r.headers.get('content-type')).toBe('application/problem+json');
  expect(ProblemSchema.parse(r.body)).toMatchObject({ status, type: `${DOCS}/location/problems#${fragment}` });
  expect(r.headers.get('x-service-request-id')).toMatch(/\S{8,}/);
}

const validate = (bearer: string | undefined, body: unknown = address, headers: Record<string, string> = {}) =>
  call(sb.url, '/location/v1/validate', { json: body, headers, ...(bearer === undefined ? {} : { bearer }) });
const startSession = (bearer: string, country = 'DE', headers: Record<string, string> = {}) =>
  call(sb.url, '/location/v1/start-session', { json: { country }, bearer, headers });
const autocomplete = (
  bearer: string | undefined,
  body: unknown = { country: 'DE', query: exact.input.street ?? 'Hauptstraße' },
  headers: Record<string, string> = {},
) => call(sb.url, '/location/v1/autocomplete', { json: body, headers, ...(bearer === undefined ? {} : { bearer }) });
async function sessionToken(key: string = KEYS.main, country = 'DE'): Promise<string> {
  const r = await startSession(key, country);
  expect(r.status).toBe(200);
  return StartSessionResponseSchema.parse(r.body)._sessionToken;
}

beforeAll(async () => {
  sb = await startSandbox({ config: contractAccounts() });
});
afterAll(() => sb.close());

describe('address API success shapes (4.1–4.3) match @dq/core schemas', () => {
  it('validate answers 200 application/json with a resultClass and a list of candidates', async () => {
    const r = await validate(KEYS.main, { ...address, _options: { include: ['coordinates-wgs84', 'metadata'] } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    const result = AddressResultSchema.parse(r.body);
    expect(result.resultClass).toBe('A');
    expect(result.results[0]?.coordinates?.wgs84.lat).toEqual(expect.any(Number));
    expect(result.results[0]?._meta?.fields).toBeDefined();
  });

  it('batch/sync answers one address with its customerAddressId echoed', async () => {
    const r = await call(sb.url, '/location/v1/validate/batch/sync', { json: { ...address, customerAddressId: 'row-17' }, bearer: KEYS.main });
    expect(r.status).toBe(200);
    expect(BatchResultSchema.parse(r.body)).toMatchObject({ customerAddressId: 'row-17', resultClass: 'A' });
  });

  it('start-session returns a token that autocomplete and validate accept', async () => {
    const token = await sessionToken();
    const ac = await autocomplete(token);
    expect(ac.status).toBe(200);
    expect(AutocompleteResponseSchema.parse(ac.body).results.length).toBeGreaterThan(0);
    const v = await validate(token);
    expect(v.status).toBe(200);
    AddressResultSchema.parse(v.body);
  });

  it('the second API key of an account works like the first', async () => {
    expect((await validate(KEYS.mainSecond)).status).toBe(200);
  });

  it('every input variant (street+houseNumber, addressLine, localityLine) gives the same result structure', async () => {
    const { street, houseNumber, postalCode, locality, country } = address;
    const a = await validate(KEYS.main, { street, houseNumber, postalCode, locality, country });
    const b = await validate(KEYS.main, { addressLine: `${street} ${houseNumber}`, localityLine: `${postalCode} ${locality}`, country });
    expect(b.status).toBe(200);
    expect(Object.keys(b.body).sort()).toEqual(Object.keys(a.body).sort());
    expect(b.body['results'][0]).toEqual(a.body['results'][0]);
  });
});

describe('contract 7.1 error rows', () => {
  it('400 Field Validation Error: localityIdentificationSet when neither localityLine nor postalCode+locality', async () => {
    const r = await validate(KEYS.main, { street: 'Hauptstraße', houseNumber: '1', postalCode: '10117', country: 'DE' });
    expectProblem(r, 400, 'field-error');
    expect(r.body['title']).toBe('Field Validation Error');
    expect(r.body['violations']).toContainEqual({ fieldName: 'localityIdentificationSet', message: expect.any(String) });
  });

  it('400 Field Validation Error: a violation on country for "de", "XX" or none', async () => {
    for (const country of ['de', 'XX', undefined]) {
      const r = await validate(KEYS.main, { ...address, country });
      expectProblem(r, 400, 'field-error');
      expect(r.body['violations'].map((v: { fieldName: string }) => v.fieldName)).toEqual(['country']);
    }
  });

  it('400 Field Validation Error: unknown include values, and malformed JSON', async () => {
    const include = await validate(KEYS.main, { ...address, _options: { include: ['weather'] } });
    expectProblem(include, 400, 'field-error');
    expect(include.body['violations'][0].fieldName).toBe('_options.include');
    const broken = await call(sb.url, '/location/v1/validate', { raw: '{"street": ', bearer: KEYS.main, headers: { 'content-type': 'application/json' } });
    expectProblem(broken, 400, 'field-error');
  });

  it('401 No Auth Data without an Authorization header, titled as the contract says', async () => {
    const r = await validate(undefined);
    expectProblem(r, 401, 'no-auth-data');
    expect(r.body['title']).toBe('No authorization header present');
    expectProblem(await validate(undefined, address, { authorization: 'Basic Zm9vOmJhcg==' }), 401, 'no-auth-data');
    expectProblem(await call(sb.url, '/location/v1/start-session', { json: { country: 'DE' } }), 401, 'no-auth-data');
    expectProblem(await autocomplete(undefined), 401, 'no-auth-data');
  });

  it('401 API Key Invalid for a well-formed header with an unknown key', async () => {
    expectProblem(await validate('not-a-real-key-123'), 401, 'api-key-invalid');
    expectProblem(await startSession('not-a-real-key-123'), 401, 'api-key-invalid');
  });

  it('401 Origin Invalid when the Origin header matches no whitelisted domain', async () => {
    const key = KEYS.restrictedOrigin;
    expectProblem(await startSession(key, 'DE', { origin: 'https://evil.example.net' }), 401, 'origin-invalid');
    expect((await startSession(key, 'DE', { origin: 'https://shop.example.com' })).status).toBe(200);
    expect((await startSession(key, 'DE', { origin: 'https://www.example.org' })).status).toBe(200);
    const token = await sessionToken(key);
    expectProblem(await autocomplete(token, undefined, { origin: 'https://evil.example.net' }), 401, 'origin-invalid');
    expect((await autocomplete(token, undefined, { origin: 'https://shop.example.com' })).status).toBe(200);
  });

  it('401 Missing Session Token when autocomplete is called with an API key', async () => {
    expectProblem(await autocomplete(KEYS.main), 401, 'missing-session-token');
  });

  it('401 Invalid Session Token for a token that is altered or was never issued', async () => {
    const token = await sessionToken();
    const altered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expectProblem(await autocomplete(altered), 401, 'invalid-session-token');
    expectProblem(await autocomplete('dqs1.garbage'), 401, 'invalid-session-token');
    expectProblem(await validate(altered), 401, 'invalid-session-token');
  });

  it('401 Invalid Session Token for a token not sent verbatim (a character added, the signature re-encoded), which decodes to the same bytes', async () => {
    const token = await sessionToken();
    const sig = token.slice(token.lastIndexOf('.') + 1);
    const reencoded = token.slice(0, token.length - sig.length) + sig.replace(/-/g, '+').replace(/_/g, '/');
    const variants = [`${token}A`, `${token}=`, `${token}!!`, `${token}~`, `${token}.x`];
    if (reencoded !== token) variants.push(reencoded);
    for (const variant of variants) {
      expectProblem(await autocomplete(variant), 401, 'invalid-session-token');
      expectProblem(await validate(variant), 401, 'invalid-session-token');
    }
    expect((await autocomplete(token)).status).toBe(200);
  });

  it('400 on country when validate carries a session token of another country: a token serves only its own', async () => {
    const token = await sessionToken(KEYS.main, 'AT');
    const r = await validate(token);
    expectProblem(r, 400, 'field-error');
    expect(ProblemSchema.parse(r.body).violations?.map((v) => v.fieldName)).toEqual(['country']);
    expect((await validate(await sessionToken(KEYS.main, 'DE'))).status).toBe(200);
  });

  it('403 Account Disabled', async () => {
    expectProblem(await validate(KEYS.disabled), 403, 'account-disabled');
    expectProblem(await startSession(KEYS.disabled), 403, 'account-disabled');
  });

  it('403 Service Disabled when the plan excludes the API', async () => {
    expectProblem(await validate(KEYS.companyOnly), 403, 'service-disabled');
    expectProblem(await startSession(KEYS.companyOnly), 403, 'service-disabled');
  });

  it("403 Feature Disabled for autocomplete on a validation-only plan (7.1's example)", async () => {
    const token = await sessionToken(KEYS.addressOnly);
    expectProblem(await autocomplete(token), 403, 'feature-disabled');
    expect((await validate(token)).status).toBe(200);
  });

  it('403 Feature Disabled for autocomplete on an account that switched it off', async () => {
    const token = await sessionToken(KEYS.noAutocompleteFeature);
    expectProblem(await autocomplete(token), 403, 'feature-disabled');
    expect((await validate(KEYS.noAutocompleteFeature)).status).toBe(200);
  });

  it('403 Quota Expired once the prepaid plan period has passed, on free calls too', async () => {
    expectProblem(await validate(KEYS.expired), 403, 'quota-expired');
    expectProblem(await startSession(KEYS.expired), 403, 'quota-expired');
  });

  it('403 Quota Exhausted once the prepaid requests are used up (tested fully in accounts.test.ts)', async () => {
    for (let i = 0; i < 4; i++) expect((await validate(KEYS.smallQuota)).status).toBe(200);
    expectProblem(await validate(KEYS.smallQuota), 403, 'quota-exhausted');
  });

  it('403 Expired Session Token after the session lifetime, and a new session works again', async () => {
    const token = await sessionToken(KEYS.shortSession);
    expect((await autocomplete(token)).status).toBe(200);
    await sleep(400);
    expectProblem(await autocomplete(token), 403, 'expired-session-token');
    expectProblem(await validate(token), 403, 'expired-session-token');
    expect((await autocomplete(await sessionToken(KEYS.shortSession))).status).toBe(200);
  });

  it('400 on country when autocomplete asks for another country than the session was started for', async () => {
    const token = await sessionToken(KEYS.main, 'AT');
    const r = await autocomplete(token, { country: 'DE', query: 'Berlin' });
    expectProblem(r, 400, 'field-error');
    expect(r.body['violations'][0].fieldName).toBe('country');
  });

  it('404 Not Found for an unknown URL', async () => {
    expectProblem(await call(sb.url, '/location/v1/validatex', { json: address, bearer: KEYS.main }), 404, 'not-found');
    expectProblem(await call(sb.url, '/location/v2/validate', { json: address, bearer: KEYS.main }), 404, 'not-found');
  });

  it('405 Method Not Allowed for any method but POST, with Allow: POST', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const r = await call(sb.url, '/location/v1/validate', { method, bearer: KEYS.main });
      expectProblem(r, 405, 'method-not-allowed');
      expect(r.headers.get('allow')).toBe('POST');
    }
  });

  it('415 Unsupported Media Type unless the body is declared application/json', async () => {
    const r = await call(sb.url, '/location/v1/validate', { raw: JSON.stringify(address), bearer: KEYS.main, headers: { 'content-type': 'text/plain' } });
    expectProblem(r, 415, 'unsupported-media-type');
    const charset = await call(sb.url, '/location/v1/validate', {
      raw: JSON.stringify(address),
      bearer: KEYS.main,
      headers: { 'content-type': 'application/json; charset=UTF-8' },
    });
    expect(charset.status).toBe(200);
  });

  it('500 Country not available for a valid country without reference data', async () => {
    expectProblem(await validate(KEYS.main, { ...address, country: 'JP' }), 500, 'country-not-available');
  });

  it('500 Internal Error (injected) still carries X-Service-Request-Id and problem+json', async () => {
    sb.setFaults({ validate: { errorRate: 1, errorStatuses: [500] } });
    try {
      expectProblem(await validate(KEYS.main), 500, 'internal-error');
    } finally {
      sb.setFaults({});
    }
  });

  it('every response carries a unique X-Service-Request-Id', async () => {
    const replies = await Promise.all([validate(KEYS.main), validate(undefined), call(sb.url, '/nowhere'), validate(KEYS.main, { country: 'DE' })]);
    const ids = replies.map((r) => r.headers.get('x-service-request-id'));
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a 4xx repeats identically when the request is repeated', async () => {
    const body = { street: 'Hauptstraße', country: 'DE' };
    const [a, b] = [await validate(KEYS.main, body), await validate(KEYS.main, body)];
    expect(a.status).toBe(400);
    expect(b.body).toEqual(a.body);
  });
});
