import type { Mode } from './types.js';

/**
 * Which platform answers the calls of `mode`: the host name (lower-case, as URL gives it) and path,
 * without a trailing slash, of the URL the mode calls (`baseUrl` for addresses, `realtimeUrl`, by
 * default the base URL, for the company modes). Not its scheme, port, user or query: the same
 * platform reached over another port or with other credentials gives the same answers. Part of
 * the result store's keys and of what a resumed run must share with the run it continues
 * (docs/architecture.md "The result store"). Undefined without a URL; an unparsable URL as given.
 */
export function answeringPlatform(mode: Mode, baseUrl: string | undefined, realtimeUrl?: string): string | undefined {
  const url = mode === 'address' ? baseUrl : (realtimeUrl ?? baseUrl);
  if (url === undefined) return undefined;
  try {
    const { hostname, pathname } = new URL(url);
    return `${hostname}${pathname.replace(/\/+$/, '')}`;
  } catch {
    return url;
  }
}
