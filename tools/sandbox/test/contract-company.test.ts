import { createHash } from 'node:crypto';
import {
  CompanyErrorBodySchema,
  CompanySuccessSchema,
  installerPath,
  PhoneDescribeSchema,
  REFDATA_INSTALLERS,
  SOFTWARE_ARTIFACTS,
  SOFTWARE_PLATFORMS,
  SOFTWARE_PRODUCTS,
  softwarePath,
  VatResultSchema,
} from '@dq/core/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompanyService, makeVatId, startSandbox, type Sandbox } from '../src/index.js';
import { contractAccounts, KEYS, SMALL_QUOTA } from './support/accounts.js';
import { call, type Reply } from './support/http.js';

// Contract 7.2 row by row, plus the success shapes of company (4.7), phone describe (4.6) and
// downloads (4.4, 4.5), against a running sandbox with plain fetch.
let sb: Sandbox;
const known = createCompanyService({ seed: 1 }).companies.find((c) => c.trStatus === 'active');
if (known === undefined) throw new Error('the register has no active company');

const company = (bearer: string | undefined, body: unknown, query = '', headers: Record<string, string> = {}) =>
  call(sb.url, `/companies/v2${query}`, { json: body, headers, ...(bearer === undefined ? {} : { bearer }) });

function expectEnvelope(r: Reply, status: number): void {
  expect(r.status).toBe(status);
  expect(CompanyErrorBodySchema.parse(r.body)).toMatchObject({ status, path: '/companies/v2' });
  expect(Number.isNaN(Date.parse(r.body['timestamp']))).toBe(false);
}

beforeAll(async () => {
  sb = await startSandbox({ config: contractAccounts() });
});
afterAll(() => sb.close());

describe('company validation success shapes (4.7) match @dq/core schemas', () => {
  it('a company search finds the company by name with score 100 and sets X-Total-Count', async () => {
    const r = await company(KEYS.main, { company: known.company, zip: known.zip, city: known.city });
    expect(r.status).toBe(200);
    const body = CompanySuccessSchema.parse(r.body);
    expect(body.companies[0]).toMatchObject({ id: known.id, searchScore: 100, searchMethod: 'company' });
    expect(r.headers.get('x-total-count')).toBe(String(body.companies.length));
  });

  it('a tr search finds the company by court, type and number', async () => {
    const r = await company(KEYS.main, { trCourt: known.trCourt, trType: known.trType, trNo: known.trNo }, '?searchMethod=tr');
    expect(CompanySuccessSchema.parse(r.body).companies[0]).toMatchObject({ id: known.id, searchMethod: 'tr' });
  });

  it('a vat check answers 200 with VALID_VAT_ID or INVALID_VAT_ID', async () => {
    const valid = makeVatId('DE', 3);
    const ok = await company(KEYS.main, { vatId: valid }, '?searchMethod=vat');
    expect(VatResultSchema.parse(ok.body)).toEqual({ status: 200, code: 'VALID_VAT_ID' });
    const broken = valid.slice(0, -1) + String((Number(valid.slice(-1)) + 1) % 10);
    expect(VatResultSchema.parse((await company(KEYS.main, { vatId: broken }, '?searchMethod=vat')).body).code).toBe('INVALID_VAT_ID');
  });

  it('X-Auth-Token is accepted instead of a Bearer header', async () => {
    expect((await company(undefined, { company: known.company }, '', { 'x-auth-token': KEYS.main })).status).toBe(200);
  });
});

describe('contract 7.2 rows', () => {
  it('400 for out-of-range parameters, a body without the mandatory field, and a VAT ID of an unknown country', async () => {
    expectEnvelope(await company(KEYS.main, { company: known.company }, '?limit=51'), 400);
    expectEnvelope(await company(KEYS.main, { company: known.company }, '?minScore=0'), 400);
    expectEnvelope(await company(KEYS.main, { zip: known.zip }), 400);
    expectEnvelope(await company(KEYS.main, { vatId: 'XX123456789' }, '?searchMethod=vat'), 400);
    expectEnvelope(await call(sb.url, '/companies/v2', { raw: '{not json', bearer: KEYS.main, headers: { 'content-type': 'application/json' } }), 400);
  });

  it('400 for a JSON body not declared as JSON (4.7: the body is application/json)', async () => {
    const raw = JSON.stringify({ company: known.company });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', '']) {
      expectEnvelope(await call(sb.url, '/companies/v2', { raw, bearer: KEYS.main, headers: { 'content-type': type } }), 400);
    }
    expect((await call(sb.url, '/companies/v2', { raw, bearer: KEYS.main, headers: { 'content-type': 'application/json;charset=UTF-8' } })).status).toBe(200);
  });

  it('401 when authorization is missing or invalid', async () => {
    expectEnvelope(await company(undefined, { company: known.company }), 401);
    expectEnvelope(await company('wrong-key-12345', { company: known.company }), 401);
  });

  it('403 when the service is not enabled for the account, or the account is disabled or its plan expired', async () => {
    expectEnvelope(await company(KEYS.addressOnly, { company: known.company }), 403);
    expectEnvelope(await company(KEYS.disabled, { company: known.company }), 403);
    expectEnvelope(await company(KEYS.expired, { company: known.company }), 403);
  });

  it('403 when the maximum number of requests is reached', async () => {
    for (let i = 0; i < SMALL_QUOTA; i++) expect((await company(KEYS.smallQuota, { company: known.company })).status).toBe(200);
    expectEnvelope(await company(KEYS.smallQuota, { company: known.company }), 403);
  });

  it('500 for a server error (injected), in the same envelope', async () => {
    sb.setFaults({ company: { errorRate: 1, errorStatuses: [500] } });
    try {
      expectEnvelope(await company(KEYS.main, { company: known.company }), 500);
    } finally {
      sb.setFaults({});
    }
  });
});

describe('phone describe (4.6) and downloads (4.4, 4.5)', () => {
  it('describe answers the 2.5 shape, which @dq/core parses', async () => {
    const r = await call(sb.url, '/rest/describe/phone_number_analysis/analyse_phone', { bearer: KEYS.main });
    expect(r.status).toBe(200);
    const body = PhoneDescribeSchema.parse(r.body);
    expect(body.content[0]?.parameters.map((p) => p.name)).toEqual(['language', 'country', 'par_format', 'par_verbosity']);
  });

  it('version.txt needs the key and holds a yyyy-mm-01 version on its first line', async () => {
    expect((await call(sb.url, '/download/v1/data/post/version.txt')).status).toBe(401);
    const r = await call(sb.url, '/download/v1/data/post/version.txt', { bearer: KEYS.main });
    expect(r.status).toBe(200);
    expect(r.text.split('\n')[0]).toMatch(/^\d{4}-(0[1-9]|1[0-2])-01$/);
  });

  it('a reference-data zip matches its .sha512, which is served without authentication', async () => {
    const version = (await call(sb.url, '/download/v1/data/post/version.txt', { bearer: KEYS.main })).text.split('\n')[0];
    const path = `/download/v1/data/post/DE/release-v3/${version}/DE_001.zip`;
    const zip = await fetch(sb.url + path, { headers: { authorization: `Bearer ${KEYS.main}` } });
    expect(zip.status).toBe(200);
    const bytes = Buffer.from(await zip.arrayBuffer());
    expect(bytes.subarray(0, 2).toString('latin1')).toBe('PK');
    const sum = await call(sb.url, `${path}.sha512`);
    expect(sum.status).toBe(200);
    expect(sum.text.split(/\s+/)[0]).toBe(createHash('sha512').update(bytes).digest('hex'));
    expect((await call(sb.url, path)).status).toBe(401);
  });

  it('a plan whose period has passed gets 403 on the free calls too: phone describe and downloads', async () => {
    const phone = await call(sb.url, '/rest/describe/phone_number_analysis/analyse_phone', { bearer: KEYS.expired });
    expect(phone.status).toBe(403);
    expect(CompanyErrorBodySchema.parse(phone.body)).toMatchObject({ status: 403, path: '/rest/describe/phone_number_analysis/analyse_phone' });
    const r = await call(sb.url, '/download/v1/data/post/version.txt', { bearer: KEYS.expired });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ status: 403, type: expect.stringMatching(/#quota-expired$/) });
  });

  it('a Range under an If-Range is ignored (no validator is issued, so none matches): the whole file, 200', async () => {
    const path = '/download/v1/data/post/version.txt';
    const whole = await call(sb.url, path, { bearer: KEYS.main });
    const ranged = await call(sb.url, path, { bearer: KEYS.main, headers: { range: 'bytes=0-3' } });
    expect(ranged.status).toBe(206);
    const guarded = await call(sb.url, path, { bearer: KEYS.main, headers: { range: 'bytes=0-3', 'if-range': '"nope"' } });
    expect(guarded.status).toBe(200);
    expect(guarded.text).toBe(whole.text);
  });

  it('serves every software path and installer that @dq/core builds, and uws only for linux', async () => {
    const paths: string[] = [];
    for (const product of SOFTWARE_PRODUCTS)
      for (const artifact of SOFTWARE_ARTIFACTS)
        for (const platform of [...SOFTWARE_PLATFORMS, undefined]) {
          const built = softwarePath({ product, artifact, platform });
          if (built.ok) paths.push(built.value);
        }
    for (const installer of REFDATA_INSTALLERS) {
      const built = installerPath(installer);
      if (built.ok) paths.push(built.value);
    }
    expect(paths.length).toBeGreaterThan(REFDATA_INSTALLERS.length);
    for (const path of paths) {
      const r = await fetch(sb.url + path, { method: 'HEAD', headers: { authorization: `Bearer ${KEYS.main}` } });
      expect({ path, status: r.status }).toEqual({ path, status: 200 });
    }
    const windowsUws = await call(sb.url, '/download/v1/software/uws/latest/windows/uws.zip', { bearer: KEYS.main });
    expect(windowsUws.status).toBe(404);
  });

  it('a software package carries a versioned file name in Content-Disposition', async () => {
    const r = await fetch(`${sb.url}/download/v1/software/software-bundle/latest/linux/software-bundle.zip`, {
      headers: { authorization: `Bearer ${KEYS.main}` },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toMatch(/filename="?[^"]*\d+\.\d+[^"]*\.zip/);
    await r.arrayBuffer();
  });
});
