import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanseArgs, createCustomers, runCli, startEnv } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('dq-pg and a --db URL it cannot use as given', () => {
  it('a raw "%" in the password: exit 2 saying to write it as %25, the password not shown', async () => {
    const db = await env.pg.createDatabase();
    const url = new URL(db);
    const withPercent = `postgres://etl:50%off@${url.host}${url.pathname}`;
    for (const args of [
      ['status', '--db', withPercent],
      ['cleanse', '--db', withPercent, '--table', 'customers', '--key', 'id', '--base-url', env.sandbox.url],
    ]) {
      const res = await runCli(args);
      expect(res.code, res.stderr).toBe(2);
      expect(res.stderr).toContain('dq-pg: usage: --db: the password in the URL (the password is not shown) holds a "%" that is not percent-encoding');
      expect(res.stderr).toContain('%25');
      expect(res.stderr).not.toContain('this is a bug');
      expect(res.stderr).not.toContain('50%off');
      expect(res.stderr).not.toContain('off@');
    }
  });

  it('an invalid ?query_timeout= in the URL: exit 2 naming the parameter, not "db-unreachable, retry later"', async () => {
    const db = await env.pg.createDatabase();
    await createCustomers(db, 10);
    for (const value of ['abc', '0', '-5', '10s']) {
      const url = new URL(db);
      url.searchParams.set('query_timeout', value);
      for (const args of [['status', '--db', url.toString()], cleanseArgs(url.toString(), env.sandbox, ['--run-id', 'qt'])]) {
        const res = await runCli(args);
        expect(res.code, res.stderr).toBe(2);
        expect(res.stderr).toContain(`dq-pg: usage: --db: ?query_timeout=${value} in the URL is not a number of milliseconds`);
        expect(res.stderr).not.toContain('db-unreachable');
      }
    }
    // A valid one is taken.
    const url = new URL(db);
    url.searchParams.set('query_timeout', '60000');
    expect((await runCli(cleanseArgs(url.toString(), env.sandbox, ['--run-id', 'qt']))).code).toBe(0);
  }, 60_000);
});
