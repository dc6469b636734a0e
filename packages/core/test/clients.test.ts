import { afterEach, describe, expect, test } from 'vitest';
import { AddressClient, CompanyClient, PhoneClient } from '../src/clients/index.js';
import { ContractError, LocalValidationError } from '../src/errors/index.js';
import { createTransport } from '../src/transport/index.js';
import type { Transport } from '../src/transport/index.js';
import { CLASS_A, startServer } from './transport-test-server.js';
import type { Handler, SeenRequest, TestServer } from './transport-test-server.js';

const servers: TestServer[] = [];
let transport: Transport | undefined;
afterEach(async () => {
  await transport?.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
  transport = undefined;
});

const API_KEY = 'key-clients-test';

async function serve(handler: Handler): Promise<TestServer> {
  const s = await startServer(handler);
  servers.push(s);
  return s;
}

function company(id: number, score: number) {
  return { id, company: `ACME ${id} GmbH`, zip: 10117, city: 'Berlin', street: 'Hauptstr. 1', trStatus: 'active', searchMethod: 'company', searchScore: score };
}

describe('AddressClient', () => {
  test('validate posts the address with the API key and returns the result with its request id', async () => {
    const s = await serve(() => ({ body: CLASS_A }));
    transport = createTransport({ baseUrl: s.url, apiKey: API_KEY });
    const res = await new AddressClient(transport).validate({
      street: 'Unter den Linden',
      houseNumber: '1',
      postalCode: '10117',
      locality: 'Berlin',
      country: 'DE',
    });
    expect(res.data.resultClass).toBe('A');
    expect(res.requestId).toBe('req-1');
    const [req] = s.requests;
    expect([req!.method, req!.path, req!.headers.authorization, req!.headers['content-type']]).toEqual([
      'POST',
      '/location/v1/validate',
      `Bearer ${API_KEY}`,
      'application/json',
    ]);
    expect(req!.body).toMatchObject({ postalCode: '10117', locality: 'Berlin', country: 'DE' });
  });

  test('batchSync sends the customerAddressId and accepts the echoed result', async () => {
    const s = await serve((req) => ({ body: { ...CLASS_A, customerAddressId: (req.body as { customerAddressId: string }).customerAddressId } }));
    transport = createTransport({ baseUrl: s.url, apiKey: API_KEY });
    const res = await new AddressClient(transport).batchSync({ localityLine: '10117 Berlin', country: 'DE' }, 'row-42');
    expect(res.data.customerAddressId).toBe('row-42');
    expect(s.requests[0]!.path).toBe('/location/v1/validate/batch/sync');
    expect(s.requests[0]!.body).toMatchObject({ customerAddressId: 'row-42', localityLine: '10117 Berlin' });
  });

  test('batchSync refuses an answer for another customerAddressId as a contract error', async () => {
    const s = await serve(() => ({ body: { ...CLASS_A, customerAddressId: 'row-7' } }));
    transport = createTransport({ baseUrl: s.url, apiKey: API_KEY });
    const e = await new AddressClient(transport).batchSync({ localityLine: 'Berlin' }, 'row-42').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ContractError);
    expect((e as ContractError).requestId).toBe('req-1');
  });

  test('startSession returns a fresh token on every call', async () => {
    let n = 0;
    const s = await serve(() => ({ body: { _sessionToken: `fresh-${++n}` } }));
    transport = createTransport({ baseUrl: s.url, apiKey: API_KEY });
    const client = new AddressClient(transport);
    expect((await client.startSession('DE')).data._sessionToken).toBe('fresh-1');
    expect((await client.startSession('DE')).data._sessionToken).toBe('fresh-2');
  });
});

describe('CompanyClient', () => {
  test('company search sends its query parameters on the realtime host and reads X-Total-Count', async () => {
    const address = await serve(() => ({ status: 500 }));
    const realtime = await serve(() => ({ headers: { 'x-total-count': '2' }, body: { status: 200, companies: [company(1, 100), company(2, 91)] } }));
    transport = createTransport({ baseUrl: address.url, realtimeUrl: realtime.url, apiKey: API_KEY });
    const res = await new CompanyClient(transport).company({ company: 'ACME', city: 'Berlin' }, { minScore: 90, limit: 10, lang: 'de', includeDeleted: true });
    expect(res.totalCount).toBe(2);
    expect(res.data.companies.map((c) => c.searchScore)).toEqual([100, 91]);
    const [req] = realtime.requests;
    expect(req!.path).toBe('/companies/v2');
    expect(Object.fromEntries(req!.query)).toEqual({ searchMethod: 'company', minScore: '90', limit: '10', lang: 'de', includeDeleted: 'true' });
    expect(req!.headers['content-type']).toBe('application/json;charset=UTF-8');
    expect(req!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(address.requests).toHaveLength(0);
  });

  test('vat returns the check code', async () => {
    const s = await serve(() => ({ body: { status: 200, code: 'INVALID_VAT_ID' } }));
    transport = createTransport({ baseUrl: s.url, apiKey: API_KEY });
    const res = await new CompanyClient(transport).vat({ vatId: 'DE000000000' });
    expect(res.data.code).toBe('INVALID_VAT_ID');
    expect(s.requests[0]!.query.get('searchMethod')).toBe('vat');
  });

  test('pages walks offset and limit until a short page', async () => {
    const all = Array.from({ length: 23 }, (_, i) => company(i + 1, 100 - i));
    const s = await serve((req: SeenRequest) => {
      const offset = Number(req.query.get('offset'));
      const limit = Number(req.query.get('limit'));
      const page = all.slice(offset, offset + limit);
      return { headers: { 'x-total-count': String(page.length) }, body: { status: 200, companies: page } };
    });
    transport = createTransport({ baseUrl: s.url, apiKey: API_KEY });
    const hits = await new CompanyClient(transport).all('tr', { trCourt: 'Berlin', trType: 'HRB', trNo: 1234 }, {}, { pageSize: 10 });
    expect(hits.map((c) => c.id)).toEqual(all.map((c) => c.id));
    expect(s.requests.map((r) => `${r.query.get('offset')}/${r.query.get('limit')}`)).toEqual(['0/10', '10/10', '20/10']);
  });
});

describe('PhoneClient', () => {
  test('describe GETs the request description from the realtime host', async () => {
    const description = {
      links: [{ rel: 'self', href: '/rest/describe/phone_number_analysis/analyse_phone' }],
      content: [
        {
          parameters: [
            { name: 'language', type: 'Enum', values: { English: 'en' }, defaultValue: 'en' },
            { name: 'par_verbosity', type: 'Numeric', minimumValue: 0, maximumValue: 3, defaultValue: 2 },
          ],
        },
      ],
    };
    const realtime = await serve(() => ({ body: description }));
    transport = createTransport({ baseUrl: 'http://127.0.0.1:9', realtimeUrl: realtime.url, apiKey: API_KEY });
    const res = await new PhoneClient(transport).describe();
    expect(res.data.content[0]!.parameters.map((p) => p.name)).toEqual(['language', 'par_verbosity']);
    expect([realtime.requests[0]!.method, realtime.requests[0]!.path]).toEqual(['GET', '/rest/describe/phone_number_analysis/analyse_phone']);
  });
});

describe('local validation refuses bad input before any request', () => {
  const cases: Array<[string, (t: Transport) => Promise<unknown>, string]> = [
    [
      'an address without locality identification',
      (t) => new AddressClient(t).validate({ street: 'Hauptstr.', houseNumber: '1', country: 'DE' }),
      'localityIdentificationSet',
    ],
    ['a lower-case country', (t) => new AddressClient(t).validate({ localityLine: 'Berlin', country: 'de' }), 'country'],
    [
      'an unknown include value',
      (t) => new AddressClient(t).batchSync({ localityLine: 'Berlin', _options: { include: ['everything' as 'metadata'] } }, 'r1'),
      '_options.include.0',
    ],
    ['limit=51 on a company search', (t) => new CompanyClient(t).company({ company: 'ACME' }, { limit: 51 }), 'limit'],
    ['minScore=0 on a company search', (t) => new CompanyClient(t).company({ company: 'ACME' }, { minScore: '0' }), 'minScore'],
    ['a tr search without trNo', (t) => new CompanyClient(t).tr({ trCourt: 'Berlin', trType: 'HRB' } as never), 'trNo'],
    ['an autocomplete without text', (t) => new AddressClient(t).autocomplete({ country: 'DE' }), 'query'],
  ];

  test.each(cases)('%s is refused naming the field', async (_what, call, field) => {
    const s = await serve(() => ({ body: CLASS_A }));
    const t = createTransport({ baseUrl: s.url, apiKey: API_KEY });
    transport = t;
    const e = await call(t).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LocalValidationError);
    expect((e as LocalValidationError).code).toBe('local-validation');
    expect((e as LocalValidationError).violations.map((v) => v.fieldName)).toContain(field);
    expect((e as LocalValidationError).message).toContain(field);
    expect(s.requests).toHaveLength(0);
  });
});
