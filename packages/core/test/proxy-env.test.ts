import { afterEach, describe, expect, it } from 'vitest';
import { proxyShownFor } from '../src/transport/agent.js';
import { classifyFailure } from '../src/transport/http-failure.js';

// Which requests go through the proxy the environment names, as the messages show it (the
// requests themselves are tested through a real proxy in the integration tests, test/proxy.test.ts).

const NAMES = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];
const saved = Object.fromEntries(NAMES.map((n) => [n, process.env[n]]));
afterEach(() => {
  for (const n of NAMES) {
    if (saved[n] === undefined) delete process.env[n];
    else process.env[n] = saved[n];
  }
});
function setEnv(vars: Record<string, string>): void {
  for (const n of NAMES) delete process.env[n];
  Object.assign(process.env, vars);
}

describe('the proxy of a request', () => {
  it('is HTTPS_PROXY for https and HTTP_PROXY for http, lower-case names first, its password masked', () => {
    setEnv({ HTTPS_PROXY: 'http://u:secret@proxy.corp:3128', HTTP_PROXY: 'http://plain.corp:8080', https_proxy: 'http://u:secret@lower.corp:3128' });
    expect(proxyShownFor('https://api.example.com')).toBe('http://u:***@lower.corp:3128');
    expect(proxyShownFor('http://api.example.com:8080')).toBe('http://plain.corp:8080');
  });

  it('is none for a host NO_PROXY names: exactly, as a parent domain (with or without a dot), with its port, or *', () => {
    setEnv({ HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: 'localhost, .internal.corp,example.org:8443' });
    expect(proxyShownFor('https://localhost')).toBeUndefined();
    expect(proxyShownFor('https://api.internal.corp')).toBeUndefined();
    expect(proxyShownFor('https://internal.corp')).toBeUndefined();
    expect(proxyShownFor('https://a.example.org:8443')).toBeUndefined();
    expect(proxyShownFor('https://a.example.org')).toBe('http://proxy.corp:3128');
    expect(proxyShownFor('https://notinternal.corp')).toBe('http://proxy.corp:3128');
    setEnv({ HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: '*' });
    expect(proxyShownFor('https://api.example.com')).toBeUndefined();
  });

  it('is named in a connection failure, which is then not blamed on the service alone', () => {
    setEnv({ HTTPS_PROXY: 'http://u:secret@proxy.corp:3128' });
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:3128'), { code: 'ECONNREFUSED' });
    const e = classifyFailure(refused, {
      where: 'POST https://api.example.com/x',
      origin: 'https://api.example.com',
      suffix: '',
      timeout: 't',
      reconnect: 'the service may be restarting',
      url: 'base URL',
    });
    expect((e as Error).message).toBe(
      'POST https://api.example.com/x through the proxy http://u:***@proxy.corp:3128: connection failed (ECONNREFUSED); the proxy or the service may be restarting',
    );
    expect((e as { retriable: boolean }).retriable).toBe(true);
  });
});
