import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_API_KEY } from '../src/config.js';
import { startSandbox, type Sandbox } from '../src/server.js';

let sb: Sandbox;
beforeAll(async () => {
  sb = await startSandbox({ port: 0, config: { accounts: [{ id: 'a', apiKeys: [DEFAULT_API_KEY], rateLimits: { validate: 0 } }] } });
});
afterAll(async () => {
  await sb.close();
});

const validate = () =>
  fetch(`${sb.url}/location/v1/validate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${DEFAULT_API_KEY}` },
    body: JSON.stringify({ country: 'DE', street: 'Hauptstraße', houseNumber: '1', localityLine: 'Berlin' }),
  }).then((r) => r.arrayBuffer());

it('reports how many requests of an endpoint it handled at once, at most and now', async () => {
  sb.setFaults({ validate: { latencyMs: 400 } });
  try {
    await Promise.all(Array.from({ length: 6 }, validate));
    await validate();
  } finally {
    sb.setFaults({});
  }
  // Six overlapped (each held 400 ms), the seventh came alone; all are finished now.
  expect(sb.stats().concurrent['validate']).toEqual({ now: 0, max: 6 });
  sb.resetStats();
  expect(sb.stats().concurrent).toEqual({});
});
