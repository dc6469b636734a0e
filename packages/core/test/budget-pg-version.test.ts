import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeForError } from '@dq/core';
import type { Engine } from '@dq/core';
import { extraPostgres, startPostgres, withClient } from '@dq/test-support/pg';
import type { TestPostgres } from '@dq/test-support/pg';
import { addresses, batchAnswer, closeAfterEach, startScriptedPlatform, testEngine } from './engine-support.js';
import type { ScriptedPlatform } from './engine-support.js';

// The shared rate budget (--budget postgres://…) on a server older than the connectors support
// (README, "Supported PostgreSQL versions"): PostgreSQL 11, installed with the tests on linux-x64
// only (test/support's optionalDependencies).
const tooOld = extraPostgres(11);

let server: TestPostgres | undefined;
let platform: ScriptedPlatform | undefined;
let engine: Engine | undefined;

closeAfterEach(
  () => [engine, platform],
  () => (engine = platform = undefined),
);

describe.skipIf(tooOld === undefined)('the shared rate budget on PostgreSQL 11', () => {
  beforeAll(async () => {
    server = await startPostgres({ nativeDir: tooOld });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each([0, 2])(
    'stops the run before any platform call: exit 2 naming the server and its version, without the password; creates nothing (threads: %i)',
    async (threads) => {
      if (!server) throw new Error('the server did not start');
      const db = await server.createDatabase();
      platform = await startScriptedPlatform((req) => batchAnswer(req, 'A'));
      engine = testEngine(platform.url, 'test-key-5d1f0a', { threads, budget: db, rateLimits: { batch: 50 } });
      const error = await engine.process(addresses(3)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: 'budget-db-version', scope: 'run' });
      expect(exitCodeForError(error)).toBe(2);
      const message = (error as Error).message;
      expect(message).toMatch(
        /^the shared rate budget needs PostgreSQL 12 or later; the server at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/t_\w+ is 11\.\d+ \(server_version_num 1100\d\d\); upgrade the server, or run with --budget off to use a budget of this process only$/,
      );
      expect(message).not.toContain(decodeURIComponent(new URL(db).password));
      expect(platform.seen).toHaveLength(0);
      // Refused before the budget's table was made: nothing of the connectors is left in the database.
      const tables = await withClient(db, (c) => c.query(`SELECT to_regclass('dq_throttle') AS t`));
      expect(tables.rows[0]).toEqual({ t: null });
    },
  );
});
