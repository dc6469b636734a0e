import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_API_KEY, generateDirtyInputs, startSandbox, type Sandbox } from '../src/index.js';
import { parseRange } from '../src/routes/download.js';
import { call } from './support/http.js';

const KEY = DEFAULT_API_KEY;
const address = generateDirtyInputs(50, { seed: 11 }).find((c) => c.intendedClass === 'A')?.input;
let sb: Sandbox;
let versionPath: string;

beforeAll(async () => {
  sb = await startSandbox();
  versionPath = '/download/v1/data/post/version.txt';
});
afterAll(() => sb.close());

describe('startSandbox', () => {
  it('serves every interface on one origin with the default account', async () => {
    expect(sb.url).toBe(`http://127.0.0.1:${sb.port}`);
    expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(200);
    expect((await call(sb.url, '/companies/v2?searchMethod=vat', { json: { vatId: 'DE136695976' }, bearer: KEY })).status).toBe(200);
    expect((await call(sb.url, '/rest/describe/phone_number_analysis/analyse_phone', { bearer: KEY })).status).toBe(200);
    expect((await call(sb.url, versionPath, { bearer: KEY })).status).toBe(200);
  });

  it('fails with listen-failed when the port is taken', async () => {
    await expect(startSandbox({ port: sb.port })).rejects.toMatchObject({ code: 'listen-failed' });
  });

  it('fails with config-invalid, naming the field, for a bad download option', async () => {
    await expect(
      startSandbox({ config: { accounts: [{ id: 'a', apiKeys: ['key-aaaaaaa'] }], download: { currentVersion: '2026-11-15' } } }),
    ).rejects.toMatchObject({
      code: 'config-invalid',
      message: expect.stringContaining('currentVersion'),
    });
  });

  it('close() can be called twice and frees the port', async () => {
    const other = await startSandbox();
    await other.close();
    await other.close();
    await expect(fetch(`${other.url}/location/v1/validate`, { method: 'POST' })).rejects.toThrow();
  });
});

describe('HTTP edges', () => {
  it('refuses bodies over 1 MiB with 413 problem+json', async () => {
    const big = { ...address, street: 'x'.repeat(1.2 * 1024 * 1024) };
    const r = await call(sb.url, '/location/v1/validate', { json: big, bearer: KEY });
    expect(r.status).toBe(413);
    expect(r.body['type']).toMatch(/#payload-too-large$/);
  });

  it('keeps the connection usable after an error response', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await call(sb.url, '/location/v1/validate', { raw: 'nope', bearer: KEY, headers: { 'content-type': 'application/json' } })).status).toBe(400);
      expect((await call(sb.url, '/location/v1/validate', { json: address, bearer: KEY })).status).toBe(200);
    }
  });

  it('answers unknown real-time paths with the 2.4 envelope and others with problem+json', async () => {
    const company = await call(sb.url, '/companies/v3', { json: {}, bearer: KEY });
    expect(company.status).toBe(404);
    expect(company.body).toMatchObject({ status: 404, error: 'Not Found', path: '/companies/v3' });
    const other = await call(sb.url, '/');
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toBe('application/problem+json');
  });

  it('answers 405 with Allow for a GET on companies and a POST on downloads', async () => {
    const company = await call(sb.url, '/companies/v2', { bearer: KEY });
    expect(company.status).toBe(405);
    expect(company.headers.get('allow')).toBe('POST');
    const download = await call(sb.url, versionPath, { method: 'POST', bearer: KEY });
    expect(download.status).toBe(405);
    expect(download.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('downloads: Range and HEAD', () => {
  it('serves a range with 206 and Content-Range, and the bytes match the whole file', async () => {
    const whole = await call(sb.url, versionPath, { bearer: KEY });
    expect(whole.headers.get('accept-ranges')).toBe('bytes');
    const part = await fetch(sb.url + versionPath, { headers: { authorization: `Bearer ${KEY}`, range: 'bytes=2-5' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 2-5/${whole.text.length}`);
    expect(await part.text()).toBe(whole.text.slice(2, 6));
    const suffix = await fetch(sb.url + versionPath, { headers: { authorization: `Bearer ${KEY}`, range: 'bytes=-3' } });
    expect(await suffix.text()).toBe(whole.text.slice(-3));
  });

  it('answers 416 with Content-Range bytes */size for a range past the end', async () => {
    const size = (await call(sb.url, versionPath, { bearer: KEY })).text.length;
    const r = await fetch(sb.url + versionPath, { headers: { authorization: `Bearer ${KEY}`, range: `bytes=${size}-` } });
    expect(r.status).toBe(416);
    expect(r.headers.get('content-range')).toBe(`bytes */${size}`);
    await r.arrayBuffer();
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const r = await fetch(sb.url + versionPath, { method: 'HEAD', headers: { authorization: `Bearer ${KEY}` } });
    expect(r.status).toBe(200);
    expect(Number(r.headers.get('content-length'))).toBeGreaterThan(0);
    expect(await r.text()).toBe('');
  });

  it('parses ranges as RFC 9110 says, ignoring what it cannot serve', () => {
    expect(parseRange('bytes=0-99', 50)).toEqual({ start: 0, end: 49 });
    expect(parseRange('bytes=10-', 50)).toEqual({ start: 10, end: 49 });
    expect(parseRange('bytes=-10', 50)).toEqual({ start: 40, end: 49 });
    expect(parseRange('bytes=50-', 50)).toBe('unsatisfiable');
    expect(parseRange('bytes=-0', 50)).toBe('unsatisfiable');
    expect(parseRange('bytes=5-1', 50)).toBeNull();
    expect(parseRange('bytes=0-1,5-6', 50)).toBeNull();
    expect(parseRange('items=0-1', 50)).toBeNull();
  });
});

describe('requests the HTTP parser refuses', () => {
  it('still get a 400 with X-Service-Request-Id', async () => {
    const { connect } = await import('node:net');
    const socket = connect(sb.port, '127.0.0.1');
    const reply = await new Promise<string>((resolve, reject) => {
      let data = '';
      socket.on('data', (d: Buffer) => (data += d.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
      socket.write('NOT HTTP AT ALL\r\n\r\n');
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(reply).toMatch(/X-Service-Request-Id: [0-9a-f-]{36}\r\n/);
  });
});
