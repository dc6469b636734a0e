import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';
import { AddressClient, CompanyClient } from '../src/clients/index.js';
import { errorToData } from '../src/errors/index.js';
import { createLogger, createRedactor } from '../src/log/index.js';
import { createTransport } from '../src/transport/index.js';
import { companyError, problem, startServer, useServerAndTransport } from './transport-test-server.js';
import type { Reply } from './transport-test-server.js';

const live = useServerAndTransport();

const API_KEY = 'sk_live_9f8e7d6c5b4a3210';

describe('no credential in any log line or error message', () => {
  test('a run with sessions, renewals, retries and refusals that echo credentials leaks neither key nor token', async () => {
    const tokens: string[] = [];
    let autocompletes = 0;
    live.server = await startServer((req): Reply => {
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
    live.transport = createTransport({ baseUrl: live.server.url, apiKey: API_KEY, logger, retry: { baseDelayMs: 5 } });
    const address = new AddressClient(live.transport);
    const errors: unknown[] = [];

    await address.autocomplete({ country: 'DE', query: 'Linden' });
    await address.validate({ localityLine: 'Berlin' }).catch((e: unknown) => errors.push(e));
    await new CompanyClient(live.transport).company({ company: 'ACME' }).catch((e: unknown) => errors.push(e));
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
    expect(lines).toEqual(['{"level":"warn","time":"1970-01-01T00:00:00.000Z","run":"r1","msg":"shown","n":1}\n']);
  });

  test('a logger hides secret-named fields at any depth, registered secrets in any field, and writes errors without stacks', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', write: (l) => void lines.push(l) });
    logger.redactor.add('tok.registered.42');
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    logger.warn('connecting with tok.registered.42', {
      password: 'pw-top-1',
      db: { url: 'postgres://etl:pw-url-2@db/crm', password: 'pw-nested-3' },
      request: { headers: { Authorization: 'Bearer pw-bearer-4', 'X-Auth-Token': 'pw-xauth-5' } },
      deep: { a: { b: { c: { token: 'pw-deep-6', apiKey: 'pw-deep-7' } } } },
      list: [{ secret: 'pw-list-8' }],
      note: 'the field holds tok.registered.42 too',
      err: new Error('login failed', { cause }),
      offset: 9_007_199_254_740_993n,
    });
    expect(lines).toHaveLength(1);
    const text = lines[0]!;
    for (const secret of ['tok.registered.42', 'pw-top-1', 'pw-url-2', 'pw-nested-3', 'pw-bearer-4', 'pw-xauth-5', 'pw-deep-6', 'pw-deep-7', 'pw-list-8']) {
      expect(text).not.toContain(secret);
    }
    const line = JSON.parse(text);
    expect(line).toMatchObject({ level: 'warn', msg: 'connecting with [redacted]', password: '[redacted]', note: 'the field holds [redacted] too' });
    expect(line.db).toEqual({ url: 'postgres://etl:[redacted]@db/crm', password: '[redacted]' });
    expect(line.err).toEqual({ name: 'Error', message: 'login failed', cause: { name: 'Error', message: 'connect ECONNREFUSED', code: 'ECONNREFUSED' } });
    expect(line.offset).toBe('9007199254740993');
  });

  test('a CLI that logs and exits at once (process.exit) loses no line on stderr', () => {
    const logger = pathToFileURL(fileURLToPath(new URL('../dist/log/index.js', import.meta.url))).href;
    const script = [
      `import { createLogger } from ${JSON.stringify(logger)};`,
      `const log = createLogger({ level: 'info' });`,
      `for (let i = 0; i < 5000; i++) log.info('progress', { i, pad: 'x'.repeat(200) });`,
      `log.error('last line before exit', { code: 'quota-exhausted' });`,
      `process.exit(3);`,
    ].join('\n');
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(child.status).toBe(3);
    const lines = child.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(5001);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ level: 'error', msg: 'last line before exit', code: 'quota-exhausted' });
  });
});
