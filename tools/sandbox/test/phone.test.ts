import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/index.js';
import { call } from './support/http.js';

const KEY = 'phone-key-000001';
let sb: Sandbox;

beforeAll(async () => {
  sb = await startSandbox({
    config: {
      accounts: [
        { id: 'phone', apiKeys: [KEY] },
        { id: 'no-phone', apiKeys: ['no-phone-key-01'], services: ['address'] },
      ],
    },
  });
});
afterAll(() => sb.close());

const analyse = (params: Record<string, string>, headers: Record<string, string> = { 'x-auth-token': KEY }) =>
  call(sb.url, `/rest/phone_number_analysis/analyse_phone?${new URLSearchParams(params).toString()}`, { headers });

describe('phone describe (contract 2.5, 4.6)', () => {
  it('describes the four parameters exactly, with links to itself and to the request', async () => {
    const r = await call(sb.url, '/rest/describe/phone_number_analysis/analyse_phone', { bearer: KEY });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      links: [
        { rel: 'self', href: `${sb.url}/rest/describe/phone_number_analysis/analyse_phone` },
        { rel: 'request', href: `${sb.url}/rest/phone_number_analysis/analyse_phone` },
      ],
      content: [
        {
          parameters: [
            { name: 'language', type: 'Enum', values: { German: 'de', English: 'en', French: 'fr' }, defaultValue: 'en' },
            { name: 'country', type: 'String', length: 2 },
            { name: 'par_format', type: 'String', length: 32, defaultValue: 'INTERNATIONAL' },
            { name: 'par_verbosity', type: 'Numeric', defaultValue: 2, minimumValue: 0, maximumValue: 3 },
          ],
        },
      ],
    });
  });

  it('needs credentials (401) and the phone service (403), in the 2.4 envelope', async () => {
    const none = await call(sb.url, '/rest/describe/phone_number_analysis/analyse_phone');
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ status: 401, error: 'Unauthorized', path: '/rest/describe/phone_number_analysis/analyse_phone' });
    expect((await call(sb.url, '/rest/describe/phone_number_analysis/analyse_phone', { headers: { 'x-auth-token': 'no-phone-key-01' } })).status).toBe(403);
  });
});

describe('phone analysis (docs/platform-contract.md)', () => {
  it('analyses a Berlin landline in international form', async () => {
    const r = await analyse({ in_phone: '+49 30 12345678' });
    expect(r.body).toEqual({ out_syntax: 'VALID', out_format: '+49 30 12345678', out_type: 'FIXED_LINE', out_city: 'Berlin' });
  });

  it('reads national numbers with the country parameter and formats them as asked', async () => {
    expect((await analyse({ in_phone: '089/1234567', country: 'DE', par_format: 'E164' })).body).toMatchObject({
      out_format: '+49891234567',
      out_city: 'München',
    });
    expect((await analyse({ in_phone: '0043 1 5123456', par_format: 'NATIONAL' })).body).toMatchObject({ out_format: '01 5123456', out_city: 'Wien' });
    expect((await analyse({ in_phone: '+49 (0)221 987654', par_format: 'RFC3966' })).body).toMatchObject({
      out_format: 'tel:+49-221-987654',
      out_city: 'Köln',
    });
  });

  it('tells mobile and toll-free numbers from landlines', async () => {
    expect((await analyse({ in_phone: '0171 2345678', country: 'DE' })).body).toMatchObject({ out_type: 'MOBILE', out_city: '' });
    expect((await analyse({ in_phone: '+43 664 1234567' })).body).toMatchObject({ out_type: 'MOBILE', out_format: '+43 664 1234567' });
    expect((await analyse({ in_phone: '0800 1234567', country: 'DE' })).body).toMatchObject({ out_type: 'TOLL_FREE' });
  });

  it('finds invalid numbers and says why in the chosen language at verbosity 3', async () => {
    expect((await analyse({ in_phone: '+49 30 12' })).body['out_syntax']).toBe('INVALID');
    expect((await analyse({ in_phone: '030 1234567' })).body['out_syntax']).toBe('INVALID');
    const r = await analyse({ in_phone: '+49 30 12abc', language: 'de', par_verbosity: '3' });
    expect(r.body).toMatchObject({ out_syntax: 'INVALID', out_message: 'Unzulässige Zeichen in der Rufnummer.' });
  });

  it('returns fewer members at lower verbosity', async () => {
    expect(Object.keys((await analyse({ in_phone: '+49 30 12345678', par_verbosity: '0' })).body)).toEqual(['out_syntax']);
    expect(Object.keys((await analyse({ in_phone: '+49 30 12345678', par_verbosity: '1' })).body)).toEqual(['out_syntax', 'out_format']);
  });

  it('answers 400 naming the parameter that is out of range, and accepts Bearer and Basic credentials', async () => {
    for (const [params, name] of [
      [{ in_phone: '+49 30 1234567', par_verbosity: '4' }, 'par_verbosity'],
      [{ in_phone: '+49 30 1234567', language: 'it' }, 'language'],
      [{ in_phone: '+49 30 1234567', par_format: 'X'.repeat(33) }, 'par_format'],
      [{}, 'in_phone'],
    ] as const) {
      const r = await analyse(params);
      expect(r.status).toBe(400);
      expect(r.body['message']).toContain(name);
    }
    expect((await analyse({ in_phone: '+49 30 1234567' }, { authorization: `Bearer ${KEY}` })).status).toBe(200);
    const basic = Buffer.from(`user:${KEY}`).toString('base64');
    expect((await analyse({ in_phone: '+49 30 1234567' }, { authorization: `Basic ${basic}` })).status).toBe(200);
  });
});
