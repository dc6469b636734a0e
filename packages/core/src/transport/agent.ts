import { Agent, EnvHttpProxyAgent } from 'undici';
import type { Dispatcher } from 'undici';
import { shownUrl } from '../log/redact-url.js';

/**
 * The proxy settings of the environment, read as curl and most tools read them: `HTTPS_PROXY` for
 * https URLs, `HTTP_PROXY` for http ones (lower-case names too, which win), and `NO_PROXY`: a comma
 * list of hosts (a name also matches its subdomains, a leading dot is optional), `host:port`, or `*`.
 */
function env(name: string): string | undefined {
  const value = process.env[name.toLowerCase()] ?? process.env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** Whether any proxy is configured in the environment. */
export function proxyConfigured(): boolean {
  return env('HTTPS_PROXY') !== undefined || env('HTTP_PROXY') !== undefined;
}

/**
 * The keep-alive agent of the platform's calls and downloads: through the proxy the environment
 * names (README "Behind a proxy"), else direct. undici's `EnvHttpProxyAgent` applies the variables
 * (credentials in the proxy URL become its Proxy-Authorization).
 */
export function createAgent(options: Agent.Options): Dispatcher {
  if (!proxyConfigured()) return new Agent(options);
  // The proxy agent adds a Host header to the headers it is given, and the transport's are frozen
  // (built once, shared by its requests): it gets a copy of those.
  return new EnvHttpProxyAgent(options).compose(
    (dispatch) => (opts, handler) =>
      dispatch(Object.isFrozen(opts.headers) ? { ...opts, headers: { ...(opts.headers as Record<string, string>) } } : opts, handler),
  );
}

/**
 * The proxy a request to `origin` goes through, as it may be shown (password replaced by `***`), or
 * undefined when it goes direct.
 */
export function proxyShownFor(origin: string): string | undefined {
  const url = new URL(origin);
  const proxy = url.protocol === 'https:' ? env('HTTPS_PROXY') : env('HTTP_PROXY');
  if (proxy === undefined || bypassed(url)) return undefined;
  return shownUrl(proxy, 'the proxy in HTTPS_PROXY / HTTP_PROXY (not a URL)');
}

function bypassed(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  for (const raw of (env('NO_PROXY') ?? '').split(/[,\s]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const m = /^(.*?)(?::(\d+))?$/.exec(entry)!;
    const name = m[1]!.replace(/^\*?\./, '');
    if (m[2] !== undefined && m[2] !== port) continue;
    if (host === name || host.endsWith(`.${name}`)) return true;
  }
  return false;
}
