import { describe, expect, it } from 'vitest';
import { createCompanyService } from '../src/company/index.js';

const service = createCompanyService({ size: 500 });
const PATH = '/companies/v2';

interface ErrorEnvelope {
  timestamp: string;
  status: number;
  error: string;
  message: string;
  path: string;
}

function call(params: Record<string, string> | URLSearchParams, body: unknown) {
  const query = params instanceof URLSearchParams ? params : new URLSearchParams(params);
  return service.handle(query, body, PATH);
}

/** Asserts the 2.4 error envelope of a 400 and returns its message. */
function badRequest(params: Record<string, string> | URLSearchParams, body: unknown): string {
  const response = call(params, body);
  expect(response.status).toBe(400);
  expect(response.totalCount).toBeUndefined();
  const envelope = response.body as ErrorEnvelope;
  expect(Object.keys(envelope).sort()).toEqual(['error', 'message', 'path', 'status', 'timestamp']);
  expect(envelope).toMatchObject({ status: 400, error: 'Bad Request', path: PATH });
  expect(new Date(envelope.timestamp).toISOString()).toBe(envelope.timestamp);
  return envelope.message;
}

const name = { company: 'Bäckerei Weber e.K.' };

describe('400 for query parameters', () => {
  it.each([
    ['searchMethod', 'fuzzy'],
    ['searchMethod', 'COMPANY'],
    ['minScore', '0'],
    ['minScore', '101'],
    ['minScore', '85.5'],
    ['minScore', 'high'],
    ['minScore', ''],
    ['limit', '0'],
    ['limit', '51'],
    ['limit', '-1'],
    ['limit', '1e1'],
    ['offset', '-1'],
    ['offset', '2.5'],
    ['offset', 'next'],
    ['includeDeleted', 'yes'],
    ['includeDeleted', 'TRUE'],
    ['includeDeleted', ''],
    ['lang', 'es'],
    ['lang', 'EN'],
  ])('rejects %s=%j and names the parameter and the value', (parameter, value) => {
    const message = badRequest({ [parameter]: value }, name);
    expect(message).toContain(`'${parameter}'`);
    expect(message).toContain(`'${value}'`);
  });

  it('accepts the boundaries of every range', () => {
    const boundaries: Array<Record<string, string>> = [
      { minScore: '1' },
      { minScore: '100' },
      { limit: '1' },
      { limit: '50' },
      { offset: '0' },
      { includeDeleted: 'false' },
    ];
    for (const params of boundaries) {
      expect(call(params, name).status, JSON.stringify(params)).toBe(200);
    }
  });

  it('rejects a parameter given twice', () => {
    expect(badRequest(new URLSearchParams('limit=5&limit=6'), name)).toContain("'limit'");
  });
});

describe('400 for the body', () => {
  it.each([
    ['no JSON body', undefined],
    ['null', null],
    ['an array', [name]],
    ['a string', 'Bäckerei Weber'],
  ])('rejects %s as the body of a company search', (_label, body) => {
    expect(badRequest({}, body)).toContain('JSON object');
  });

  it.each([
    ['company', {}, 'company'],
    ['company', { company: '  ' }, 'company'],
    ['company', { company: 42 }, 'company'],
    ['company', { company: 'Weber', zip: 'D-50667' }, 'zip'],
    ['company', { company: 'Weber', zip: 123_456 }, 'zip'],
    ['company', { company: 'Weber', city: 5 }, 'city'],
    ['company', { company: 'Weber', street: '' }, 'street'],
    ['company', { company: 'Weber', city: null }, 'city'],
    ['tr', {}, 'trCourt'],
    ['tr', { trCourt: 'Amtsgericht Köln', trNo: 1234 }, 'trType'],
    ['tr', { trCourt: 'Amtsgericht Köln', trType: 'HRA' }, 'trNo'],
    ['tr', { trType: 'HRA', trNo: 1234 }, 'trCourt'],
    ['tr', { trCourt: 'Amtsgericht Köln', trType: 'XYZ', trNo: 1234 }, 'trType'],
    ['tr', { trCourt: 'Amtsgericht Köln', trType: 'HRA', trNo: 'HRA 1234' }, 'trNo'],
    ['tr', { trCourt: 'Amtsgericht Köln', trType: 'HRA', trNo: 12.5 }, 'trNo'],
    ['tr', { trCourt: 'Amtsgericht Köln', trType: 'HRA', trNo: 0 }, 'trNo'],
    ['vat', {}, 'vatId'],
    ['vat', { vatId: '' }, 'vatId'],
    ['vat', { vatId: 136695976 }, 'vatId'],
  ])('rejects a %s search with body %j and names field %s', (searchMethod, body, field) => {
    expect(badRequest({ searchMethod }, body)).toContain(`'${field}'`);
  });

  it('rejects a VAT ID with an unknown country prefix and lists the supported ones', () => {
    for (const vatId of ['XX123456789', 'GB980780684', '136695976']) {
      const message = badRequest({ searchMethod: 'vat' }, { vatId });
      expect(message, vatId).toContain(`'${vatId.slice(0, 2)}'`);
      expect(message).toContain('AT, BE, BG, CY, CZ, DE, DK, EE, EL, ES, FI, FR, HR, HU, IE, IT, LT, LU, LV, MT, NL, PL, PT, RO, SE, SI, SK, XI');
    }
  });
});

describe('message language', () => {
  it('words the message in the language asked for with lang', () => {
    const english = badRequest({ limit: '99' }, name);
    const german = badRequest({ limit: '99', lang: 'de' }, name);
    const french = badRequest({ limit: '99', lang: 'fr' }, name);
    expect(english).toMatch(/must be an integer from 1 to 50/);
    expect(german).toMatch(/muss eine ganze Zahl von 1 bis 50 sein/);
    expect(french).toMatch(/doit être un entier de 1 à 50/);
    for (const message of [english, german, french]) expect(message).toContain("'limit'");
  });

  it('words body errors in that language too', () => {
    expect(badRequest({ lang: 'de', searchMethod: 'tr' }, { trCourt: 'Köln', trType: 'HRA' })).toMatch(/Pflicht/);
  });

  it('falls back to English when lang itself is invalid', () => {
    expect(badRequest({ lang: 'xx' }, name)).toMatch(/^Query parameter 'lang' must be one of de, en, fr/);
  });

  it('shortens long values it echoes', () => {
    const message = badRequest({ searchMethod: 'x'.repeat(500) }, name);
    expect(message.length).toBeLessThan(200);
  });
});
