import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/server.js';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
});

afterAll(async () => {
  await sandbox.close();
});

/** The 2.4 envelopes as one loose shape: hits, VAT code or error. */
interface Envelope {
  status: number;
  companies?: Array<Record<string, unknown>>;
  code?: string;
  error?: string;
  message?: string;
  path?: string;
}

async function post(query: string, body: unknown): Promise<{ status: number; totalCount: string | null; json: Envelope }> {
  const response = await fetch(`${sandbox.url}/companies/v2${query}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json;charset=UTF-8', Authorization: 'Bearer dq-sandbox-key' },
    body: JSON.stringify(body),
  });
  return { status: response.status, totalCount: response.headers.get('x-total-count'), json: (await response.json()) as Envelope };
}

describe('company validation over HTTP', () => {
  it('returns hits with X-Total-Count equal to the number of companies in the body', async () => {
    const { status, totalCount, json } = await post('?minScore=60&limit=3', { company: 'Müller Maschinenbau GmbH' });
    expect(status).toBe(200);
    expect(json.status).toBe(200);
    expect(json.companies).toHaveLength(3);
    expect(json.companies?.[0]).toMatchObject({ id: 900_001, searchMethod: 'company', searchScore: 100, zip: 80331 });
    expect(totalCount).toBe('3');
  });

  it('sends X-Total-Count 0 and an empty list when nothing matches', async () => {
    const { status, totalCount, json } = await post('', { company: 'Quantenverschränkung Zyxw' });
    expect({ status, totalCount, json }).toEqual({ status: 200, totalCount: '0', json: { status: 200, companies: [] } });
  });

  it('looks up a register entry with searchMethod=tr', async () => {
    const { json } = await post('?searchMethod=tr', { trCourt: 'Amtsgericht Köln', trType: 'HRA', trNo: 1234 });
    expect(json.companies).toMatchObject([{ company: 'Bäckerei Weber e.K.', searchMethod: 'tr', searchScore: 100 }]);
  });

  it('checks a VAT ID with status 200 and a code', async () => {
    const { status, json } = await post('?searchMethod=vat', { vatId: 'ATU13585627' });
    expect({ status, json }).toEqual({ status: 200, json: { status: 200, code: 'VALID_VAT_ID' } });
  });

  it('answers a bad parameter with the 2.4 error envelope in the language asked for', async () => {
    const { status, totalCount, json } = await post('?limit=51&lang=fr', { company: 'Weber' });
    expect(status).toBe(400);
    expect(totalCount).toBeNull();
    expect(json).toMatchObject({ status: 400, error: 'Bad Request', path: '/companies/v2' });
    expect(json.message).toContain("'limit'");
    expect(json.message).toContain('doit être un entier');
  });
});
