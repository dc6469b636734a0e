import { PHONE_DESCRIBE_PATH, PhoneClient, PlatformError, isRunStop } from '@dq/core';
import type { PhoneParameter, Transport } from '@dq/core';
import type { Sandbox } from '@dq/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxWith, transportOn } from '@dq/test-support/platform';

// Contract 2.5 and 4.6: the phone analysis request's description, read with our client.
let sandbox: Sandbox;
let transport: Transport;
beforeAll(async () => {
  sandbox = await sandboxWith();
  transport = transportOn(sandbox);
});
afterAll(async () => {
  await transport.close();
  await sandbox.close();
});

describe('PhoneClient.describe against the sandbox', () => {
  it('parses the links: a self reference and the analysis request', async () => {
    const res = await new PhoneClient(transport).describe();
    expect(res.status).toBe(200);
    const byRel = Object.fromEntries(res.data.links.map((l) => [l.rel, l.href]));
    expect(byRel['self']).toBe(`${sandbox.url}${PHONE_DESCRIBE_PATH}`);
    expect(byRel['request']).toBe(`${sandbox.url}/rest/phone_number_analysis/analyse_phone`);
  });

  it('parses the four parameter descriptors with their types, values, lengths, defaults and ranges', async () => {
    const res = await new PhoneClient(transport).describe();
    const parameters: PhoneParameter[] = res.data.content.flatMap((c) => c.parameters);
    const byName = Object.fromEntries(parameters.map((p) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(['country', 'language', 'par_format', 'par_verbosity']);
    expect(byName['language']).toMatchObject({ type: 'Enum', defaultValue: 'en' });
    expect(Object.values(byName['language']?.values ?? {}).sort()).toEqual(['de', 'en', 'fr']);
    expect(byName['country']).toMatchObject({ type: 'String', length: 2 });
    expect(byName['country']?.defaultValue).toBeUndefined();
    expect(byName['par_format']).toMatchObject({ type: 'String', length: 32, defaultValue: 'INTERNATIONAL' });
    expect(byName['par_verbosity']).toMatchObject({ type: 'Numeric', defaultValue: 2, minimumValue: 0, maximumValue: 3 });
  });

  it('refuses a wrong API key with a 401 that stops the run', async () => {
    const stranger = transportOn(sandbox, { apiKey: 'not-a-known-key-42' });
    try {
      const error = await new PhoneClient(stranger).describe().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PlatformError);
      expect((error as PlatformError).status).toBe(401);
      expect(isRunStop(error)).toBe(true);
      expect((error as PlatformError).message).not.toContain('not-a-known-key-42');
    } finally {
      await stranger.close();
    }
  });
});
