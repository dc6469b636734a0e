import { mkdtemp, readFile } from 'node:fs/promises';
import { createServer, Socket as NetSocket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billable, cleanseArgs, createCustomers, resultRows, runCli, spawnCli, startEnv, summaryOf } from './support.js';
import type { TestEnv } from './support.js';

let env: TestEnv;
beforeAll(async () => {
  env = await startEnv();
  // Slow answers keep the run going long enough to cut it in the middle.
  env.sandbox.setFaults({ batch: { latencyMs: 30 } });
});
afterAll(async () => {
  await env?.stop();
});

/** A TCP proxy to the database whose connections the test can cut. */
async function startProxy(target: URL): Promise<{ url: (db: string) => string; cut: (how: 'close' | 'reset') => void; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const upstream = new NetSocket();
    sockets.add(inbound);
    sockets.add(upstream);
    upstream.connect(Number(target.port), target.hostname);
    inbound.pipe(upstream);
    upstream.pipe(inbound);
    const drop = (): void => {
      inbound.destroy();
      upstream.destroy();
    };
    inbound.on('error', drop);
    upstream.on('error', drop);
    inbound.on('close', () => sockets.delete(inbound));
    upstream.on('close', () => sockets.delete(upstream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: (db) => {
      const u = new URL(db);
      u.port = String(port);
      return u.toString();
    },
    cut: (how) => {
      server.close();
      for (const s of sockets) {
        if (how === 'reset') s.resetAndDestroy();
        else s.destroy();
      }
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('losing the database connection', () => {
  it.each([
    { how: 'close' as const, what: 'the server closing the socket ("Connection terminated unexpectedly", no code)' },
    { how: 'reset' as const, what: 'a reset (ECONNRESET)' },
  ])('ends the run with exit 75, its summary line printed, and a run that resumes without paying again: $what', async ({ how }) => {
    const ROWS = 400;
    const db = await env.pg.createDatabase();
    await createCustomers(db, ROWS);
    const proxy = await startProxy(new URL(db));
    const runId = `lost-${how}`;
    const args = (url: string) => cleanseArgs(url, env.sandbox, ['--run-id', runId, '--batch-size', '20', '--workers', '2']);
    const calls0 = billable(env.sandbox);
    const reportFile = join(await mkdtemp(join(tmpdir(), 'dq-pg-lost-')), 'run.html');
    const { done } = spawnCli([...args(proxy.url(db)), '--report', reportFile]);
    while ((await resultRows(db, runId)) < 60) await sleep(20);
    proxy.cut(how);
    const lost = await done;
    expect(lost.stderr).not.toMatch(/\n\s+at /);
    expect(lost.stderr).toMatch(/db-unreachable: lost the connection to the database .*rerun with --run-id lost-/);
    expect(lost.code).toBe(75);
    const committed = await resultRows(db, runId);
    expect(committed).toBeLessThan(ROWS);
    // The summary line is printed all the same, with the error; the database could not record the stop.
    expect(summaryOf(lost)).toMatchObject({ type: 'summary', runId, state: 'interrupted', exitCode: 75, error: { code: 'db-unreachable' } });
    expect((summaryOf(lost) as { rows: number }).rows).toBeLessThanOrEqual(committed);
    // The --report asked for is written all the same, with the error, without what the database holds.
    expect(lost.stderr).toContain(
      `dq-pg: report of the failed run written to ${reportFile}, without its corrections (the database could not be read); dq-pg report --run ${runId} --output ${reportFile} writes it whole once the database answers`,
    );
    const page = await readFile(reportFile, 'utf8');
    expect(page).toContain('db-unreachable');
    expect(page).toContain(runId);

    const resumed = await runCli(args(db));
    expect(resumed.code).toBe(0);
    expect(summaryOf(resumed)).toMatchObject({ state: 'done', rows: ROWS - committed });
    expect(await resultRows(db, runId)).toBe(ROWS);
    // Pages committed before the loss are not paid for again: at most the pages in flight (2 workers).
    expect(billable(env.sandbox) - calls0).toBeLessThanOrEqual(ROWS + 2 * 20);
  });
});
