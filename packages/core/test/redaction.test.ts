import { afterEach, describe, expect, test } from 'vitest';
import { AddressClient, CompanyClient } from '../src/clients/index.js';
import { errorToData } from '../src/errors/index.js';
import { createLogger, createRedactor } from '../src/log/index.js';
import { createTransport } from '../src/transport/index.js';
import type { Transport } from '../src/transport/index.js';
import { companyError, problem, startServer } from './transport-test-server.js';
import type { Reply, TestServer } from './transport-test-server.js';

let server: TestServer | undefined;
let transport: Transport | undefined;
afterEach(async () => {
  await transport?.close();
  await server?.close();
  transport = server = undefined;
});

const API_KEY = 'sk_live_9f8e7d6c5b4a3210';

describe('no credential in any log line or error message', () => {
  test('a run with sessions, renewals, retries and refusals that echo credentials leaks neither key nor token', async () => {
    const tokens: string[] = [];
    let autocompletes = 0;
    server = await startServer((req): Reply => {
      const auth = String(req.headers.authorization ?? '');
      if (req.path === '/location/v1/start-session') {
        const token = `sess.${tokens.length + 1}.Zm9vYmFyYmF6`;
        tokens.push(token);
        return { body: { _sessionToken: token } };
      }
      if (req.path === '/location/v1/autocomplete') {
        autocompletes++;
        if (autocompletes === 1) return problem(403, 'expired-session-token', { title: `Session token ${auth.slice(7)} expired` });
        if (autocompletes === 2) return problem(503, 'unavailable', { title: `retry later, ${auth}` });
        return { body: { results: [] } };
      }
      if (req.path === '/location/v1/validate') {
        return problem(401, 'api-key-invalid', {
          title: `API key ${API_KEY} is not valid`,
          violations: [{ fieldName: 'authorization', message: `got ${auth}` }],
        });
      }
      if (req.path === '/companies/v2') return companyError(401, 'Unauthorized', `X-Auth-Token ${API_KEY} unknown`);
      return { status: 404 };
    });

    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', write: (line) => void lines.push(line) });
    transport = createTransport({ baseUrl: server.url, apiKey: API_KEY, logger, retry: { baseDelayMs: 5 } });
    const address = new AddressClient(transport);
    const errors: unknown[] = [];

    await address.autocomplete({ country: 'DE', query: 'Linden' });
    await address.validate({ localityLine: 'Berlin' }).catch((e: unknown) => errors.push(e));
    await new CompanyClient(transport).company({ company: 'ACME' }).catch((e: unknown) => errors.push(e));
    for (const e of errors) logger.error('call failed', { err: e });
    logger.info('config', { apiKey: API_KEY, headers: { Authorization: `Bearer ${tokens[0]}` }, url: 'postgres://etl:hunter2pw@db:5432/crm' });

    expect(tokens).toHaveLength(2);
    expect(errors).toHaveLength(2);
    const texts = [...lines, ...errors.map((e) => (e as Error).message), ...errors.map((e) => JSON.stringify(errorToData(e)))];
    // The scenario did produce what we search: retries, session starts and the refusals.
    expect(lines.some((l) => l.includes('retrying'))).toBe(true);
    expect(lines.some((l) => l.includes('session token expired'))).toBe(true);
    expect(lines.filter((l) => l.includes('"level":"error"'))).toHaveLength(2);
    for (const secret of [API_KEY, ...tokens, 'hunter2pw']) {
      for (const text of texts) expect(text).not.toContain(secret);
    }
    expect(lines.join('')).toContain('[redacted]');
  });
});

describe('redactor', () => {
  test('replaces registered secrets and credential-shaped text', () => {
    const r = createRedactor(['my-registered-secret']);
    const text = [
      'value my-registered-secret here',
      'Authorization: Bearer abc.def.ghi',
      'X-Auth-Token: 12345678',
      'apiKey=ak_999999',
      '"password":"pa55word"',
      'postgres://user:s3cr3t@localhost:5432/db',
    ].join('\n');
    const out = r.redact(text);
    for (const secret of ['my-registered-secret', 'abc.def.ghi', '12345678', 'ak_999999', 'pa55word', 's3cr3t']) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain('postgres://user:[redacted]@localhost:5432/db');
  });

  test('replaces the values of secret-named keys at any depth and leaves the rest', () => {
    const r = createRedactor();
    expect(r.redactValue({ a: { password: 'x1', apiKey: 'x2', token: 'x3', requestId: 'req-1' }, list: [{ Authorization: 'x4' }] })).toEqual({
      a: { password: '[redacted]', apiKey: '[redacted]', token: '[redacted]', requestId: 'req-1' },
      list: [{ Authorization: '[redacted]' }],
    });
  });

  test('a logger writes one JSON object per line with level filtering', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', write: (l) => void lines.push(l), now: () => 0 }).child({ run: 'r1' });
    logger.debug('hidden');
    logger.warn('shown', { n: 1 });
    expect(lines).toEqual(['{"time":"1970-01-01T00:00:00.000Z","level":"warn","msg":"shown","run":"r1","n":1}\n']);
  });
});
