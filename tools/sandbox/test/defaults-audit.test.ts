import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/index.js';

// Defaults no other test leaves out: dq-sandbox with no flag at all listens on a free port
// (--port 0) and seeds its fault injection with 1 (--seed). The fault sequence a seed gives is
// what a test relying on "the same faults on every run" sees.
const BIN = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const FAULTS = { validate: { errorRate: 0.5, errorStatuses: [500, 503] } };
const started: Sandbox[] = [];
afterAll(async () => Promise.all(started.map((s) => s.close())));

/** HTTP statuses of 40 validate calls after the faults are set through the admin endpoint. */
async function faultSequence(url: string): Promise<number[]> {
  const set = await fetch(`${url}/__admin/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(FAULTS) });
  expect(set.status).toBeLessThan(300);
  await set.arrayBuffer();
  const statuses: number[] = [];
  for (let i = 0; i < 40; i += 1) {
    const r = await fetch(`${url}/location/v1/validate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer dq-sandbox-key' },
      body: JSON.stringify({ street: 'Hauptstraße', houseNumber: '1', postalCode: '10115', locality: 'Berlin', country: 'DE' }),
    });
    await r.arrayBuffer();
    statuses.push(r.status);
  }
  return statuses;
}

async function inProcess(seed: number): Promise<string> {
  const s = await startSandbox({ port: 0, seed });
  started.push(s);
  return s.url;
}

describe('dq-sandbox with no flag', () => {
  it('listens on a free port of 127.0.0.1 and injects the faults of seed 1', async () => {
    const child = spawn(process.execPath, [BIN]);
    try {
      const lines = createInterface({ input: child.stdout });
      const [url] = (await once(lines, 'line')) as [string];
      lines.close();
      const port = Number(/^http:\/\/127\.0\.0\.1:(\d+)$/.exec(url)?.[1]);
      expect(port).toBeGreaterThan(0);

      const sequence = await faultSequence(url);
      expect(sequence).toContain(200);
      expect(sequence.some((s) => s >= 500)).toBe(true);
      expect(sequence).toEqual(await faultSequence(await inProcess(1)));
      expect(sequence).not.toEqual(await faultSequence(await inProcess(2))); // the seed decides it
    } finally {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      expect((await exited)[0]).toBe(0);
    }
  });
});
