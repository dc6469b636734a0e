import { describe, expect, it } from 'vitest';
import {
  AddressResultSchema,
  AddressRequestSchema,
  BatchResultSchema,
  CompanyErrorBodySchema,
  CompanySuccessSchema,
  PhoneDescribeSchema,
  ProblemSchema,
  VatResultSchema,
  dataPath,
  installerPath,
  parseDownloadPath,
  softwarePath,
  validateAddressRequest,
  validateCompanyBody,
  validateCompanyQuery,
  validateDownloadPath,
} from '../src/schemas/index.js';

const fields = (vs: { fieldName: string }[]) => vs.map((v) => v.fieldName);

describe('bad inputs are refused locally, naming the field', () => {
  it('refuses an address with no locality identification', () => {
    const vs = validateAddressRequest({ street: 'Hauptstr.', houseNumber: '1', postalCode: '10115', country: 'DE' });
    expect(fields(vs)).toEqual(['localityIdentificationSet']);
  });

  it('refuses country "de" and suggests the upper-case code', () => {
    const vs = validateAddressRequest({ localityLine: '10115 Berlin', country: 'de' });
    expect(fields(vs)).toEqual(['country']);
    expect(vs[0]?.message).toContain('"DE"');
  });

  it('refuses limit=51, whether given as a number or as query text', () => {
    expect(fields(validateCompanyQuery({ limit: 51 }))).toEqual(['limit']);
    expect(fields(validateCompanyQuery({ limit: '51' }))).toEqual(['limit']);
  });

  it('refuses a uws download for windows', () => {
    const built = softwarePath({ product: 'uws', platform: 'windows', artifact: 'uws.zip' });
    expect(built.ok).toBe(false);
    expect(built.ok ? [] : fields(built.violations)).toEqual(['platform']);
    expect(fields(validateDownloadPath('/download/v1/software/uws/latest/windows/uws.zip'))).toEqual(['platform']);
  });
});

describe('address requests', () => {
  it('accepts localityLine alone, or postalCode with locality', () => {
    expect(validateAddressRequest({ localityLine: '10115 Berlin' })).toEqual([]);
    expect(validateAddressRequest({ postalCode: '10115', locality: 'Berlin', country: 'DE' })).toEqual([]);
    expect(AddressRequestSchema.safeParse({ postalCode: '10115', locality: 'Berlin' }).success).toBe(true);
  });

  it('treats blank locality fields as missing', () => {
    expect(fields(validateAddressRequest({ localityLine: '  ', postalCode: '10115', locality: '' }))).toEqual(['localityIdentificationSet']);
    expect(AddressRequestSchema.safeParse({ localityLine: ' ' }).success).toBe(false);
  });

  it('refuses a two-letter code that is not an ISO country, and accepts the include values docs/platform-contract.md adds', () => {
    expect(fields(validateAddressRequest({ localityLine: 'x', country: 'XX' }))).toEqual(['country']);
    const include = ['coordinates-wgs84', 'metadata', 'delivery-info', 'address-info'];
    expect(validateAddressRequest({ localityLine: 'x', _options: { include } })).toEqual([]);
  });

  it('names the offending include entry and an unknown field', () => {
    const vs = validateAddressRequest({ localityLine: 'x', postcode: '1', _options: { include: ['metadata', 'geo'] } });
    expect(fields(vs).sort()).toEqual(['_options.include.1', 'postcode']);
  });

  it('reports every problem of one request at once', () => {
    const vs = validateAddressRequest({ country: 'de', street: 42 });
    expect(fields(vs).sort()).toEqual(['country', 'localityIdentificationSet', 'street']);
  });

  it('requires customerAddressId for batch/sync', () => {
    expect(fields(validateAddressRequest({ localityLine: 'x' }, { batch: true }))).toEqual(['customerAddressId']);
    expect(validateAddressRequest({ localityLine: 'x', customerAddressId: 'r1' }, { batch: true })).toEqual([]);
  });
});

describe('responses', () => {
  const result = {
    resultClass: 'E',
    results: [
      {
        addressType: 'delivery',
        country: 'DE',
        street: 'Hauptstraße',
        houseNumberChoice: [{ from: '1', to: '41', step: 'odd' }],
        coordinates: { wgs84: { precision: 'house-number', lat: 52.52, lon: 13.4 } },
        _meta: { fields: { street: { relevance: 'MANDATORY', status: 'CORRECTED' } } },
        futureField: true,
      },
    ],
    somethingNew: 1,
  };

  it('parse a class E result and keep fields the platform may add', () => {
    const parsed = AddressResultSchema.parse(result);
    expect(parsed.results[0]?.houseNumberChoice?.[0]?.step).toBe('odd');
    expect((parsed as Record<string, unknown>)['somethingNew']).toBe(1);
    expect((parsed.results[0] as Record<string, unknown>)['futureField']).toBe(true);
  });

  it('refuse a result class outside A–F and a step other than even/odd', () => {
    expect(AddressResultSchema.safeParse({ ...result, resultClass: 'G' }).success).toBe(false);
    const badStep = { resultClass: 'E', results: [{ houseNumberChoice: [{ from: '1', to: '3', step: 'all' }] }] };
    expect(AddressResultSchema.safeParse(badStep).success).toBe(false);
  });

  it('require batch results to echo customerAddressId', () => {
    expect(BatchResultSchema.safeParse(result).success).toBe(false);
    expect(BatchResultSchema.safeParse({ ...result, customerAddressId: 'r1' }).success).toBe(true);
  });

  it('parse problem+json with violations', () => {
    const body = {
      status: 400,
      type: 'https://docs.example/location/problems#field-error',
      title: 'Field Validation Error',
      violations: [{ fieldName: 'localityIdentificationSet', message: 'missing' }],
    };
    expect(ProblemSchema.parse(body).violations?.[0]?.fieldName).toBe('localityIdentificationSet');
  });

  it('parse the company envelopes: hits, vat code, error', () => {
    const hit = { id: 1, company: 'ACME GmbH', zip: 10115, trNo: 123, trStatus: 'active', searchMethod: 'company', searchScore: 97 };
    expect(CompanySuccessSchema.parse({ status: 200, companies: [hit] }).companies[0]?.searchScore).toBe(97);
    expect(VatResultSchema.safeParse({ status: 200, code: 'MAYBE' }).success).toBe(false);
    const err = { timestamp: '2026-01-01T00:00:00Z', status: 400, error: 'Bad Request', message: 'limit', path: '/companies/v2' };
    expect(CompanyErrorBodySchema.safeParse(err).success).toBe(true);
  });

  it("give a hit's postcode as the register's five digits: the JSON number 4103 is Leipzig's 04103", () => {
    const zipOf = (zip: unknown) =>
      CompanySuccessSchema.parse({ status: 200, companies: [{ id: 1, company: 'ACME GmbH', zip, searchScore: 100 }] }).companies[0]?.zip;
    expect(zipOf(4103)).toBe('04103');
    expect(zipOf(1097)).toBe('01097');
    expect(zipOf(10115)).toBe('10115');
    expect(zipOf('04103')).toBe('04103');
    expect(zipOf(undefined)).toBeUndefined();
  });

  it('parse the phone describe document', () => {
    const doc = {
      links: [{ rel: 'self', href: '/rest/describe/phone_number_analysis/analyse_phone' }],
      content: [{ parameters: [{ name: 'language', type: 'Enum', values: { German: 'de' }, defaultValue: 'en' }] }],
    };
    expect(PhoneDescribeSchema.parse(doc).content[0]?.parameters[0]?.name).toBe('language');
  });
});

describe('company query and bodies', () => {
  it('accepts the documented ranges and refuses what is outside them', () => {
    expect(validateCompanyQuery({ searchMethod: 'tr', minScore: 100, limit: 1, offset: 0, lang: 'fr', includeDeleted: 'true' })).toEqual([]);
    const vs = validateCompanyQuery({ searchMethod: 'name', minScore: 0, offset: -1, lang: 'es', includeDeleted: 'yes' });
    expect(fields(vs).sort()).toEqual(['includeDeleted', 'lang', 'minScore', 'offset', 'searchMethod']);
    expect(fields(validateCompanyQuery({ offset: 1.5 }))).toEqual(['offset']);
  });

  it('requires each method’s mandatory fields', () => {
    expect(fields(validateCompanyBody('company', { city: 'Berlin' }))).toEqual(['company']);
    expect(fields(validateCompanyBody('tr', { trCourt: 'Berlin', trNo: 5 })).sort()).toEqual(['trType']);
    expect(fields(validateCompanyBody('vat', { vatId: ' ' }))).toEqual(['vatId']);
    expect(validateCompanyBody('vat', { vatId: 'DE123456789' })).toEqual([]);
    expect(fields(validateCompanyBody('vat', { company: 'ACME' })).sort()).toEqual(['company', 'vatId']);
  });
});

describe('download paths', () => {
  it('builds software paths, with and without the platform segment', () => {
    expect(softwarePath({ product: 'uws', platform: 'linux', artifact: 'uws.zip' })).toEqual({
      ok: true,
      value: '/download/v1/software/uws/latest/linux/uws.zip',
    });
    expect(softwarePath({ product: 'bank-service', artifact: 'release-notes.zip' })).toEqual({
      ok: true,
      value: '/download/v1/software/bank-service/latest/release-notes.zip',
    });
    const noPlatform = softwarePath({ product: 'bank-service', artifact: 'bank-service.zip' });
    expect(noPlatform.ok ? [] : fields(noPlatform.violations)).toEqual(['platform']);
    const mismatch = softwarePath({ product: 'bank-service', platform: 'aix', artifact: 'uws.zip' });
    expect(mismatch.ok ? [] : fields(mismatch.violations)).toEqual(['artifact']);
  });

  it('builds data paths for post, autocompletion and regions', () => {
    const post = dataPath({ product: 'post', country: 'DE', release: 'release-v3', version: '2026-11-01', artifact: 'DE_001.zip' });
    expect(post).toEqual({ ok: true, value: '/download/v1/data/post/DE/release-v3/2026-11-01/DE_001.zip' });
    expect(dataPath({ product: 'post', country: 'INT_ASIA', release: 'release-v1', version: '2026-01-01', artifact: 'INT_ASIA_002.zip.sha512' }).ok).toBe(true);
    expect(dataPath({ product: 'autocompletion', country: 'AT', release: 'release-v2', version: '2026-02-01', artifact: 'AC_AT.zip' }).ok).toBe(true);
  });

  it('refuses bad data path variables, naming each', () => {
    const r = dataPath({ product: 'autocompletion', country: 'WORLD', release: 'release-v4', version: '2026-11-15', artifact: 'AC_DE.zip' });
    expect(r.ok ? [] : fields(r.violations)).toEqual(['country', 'release', 'version', 'artifact']);
    const level = dataPath({ product: 'post', country: 'DE', release: 'release-v1', version: '2026-13-01', artifact: 'DE_01.zip' });
    expect(level.ok ? [] : fields(level.violations)).toEqual(['version', 'artifact']);
  });

  it('parses every kind of download path and refuses unknown installers', () => {
    expect(parseDownloadPath('/download/v1/data/post/version.txt')).toEqual({ ok: true, value: { kind: 'version-file' } });
    expect(installerPath('setupRefdata_linux_x64.sh')).toEqual({ ok: true, value: '/download/v1/data/post/setupRefdata_linux_x64.sh' });
    expect(fields(validateDownloadPath('/download/v1/data/post/setup.sh'))).toEqual(['installer']);
    const d = parseDownloadPath('/download/v1/data/post/WORLD/release-v3/2026-11-01/WORLD_001.zip.sha512');
    expect(d.ok && d.value.kind === 'data' && d.value.checksum).toBe(true);
    expect(fields(validateDownloadPath('/download/v1/data/post/DE/release-v3/2026-11-01/../x'))).toEqual(['path']);
  });
});
