import type { Target } from './http-attempt.js';
import type { QueryValue } from './types.js';

/** Distinct base + path pairs remembered; clients use a handful of constant paths. */
const MAX_CACHED_TARGETS = 256;

const ACCEPT = 'application/json, application/problem+json';

/**
 * Works out where requests go, parsing each base URL + path pair once: `new URL` per request cost
 * more than the rest of the request's set-up together.
 */
export class TargetCache {
  /** Base URL → path → parsed target: two lookups of strings that are already there, nothing joined per request. */
  readonly #parsed = new Map<string, Map<string, Readonly<Target & { search: string }>>>();
  #size = 0;

  /** Target of `path` below `base`, with `query` (undefined values left out) as its query string. */
  target(base: string, path: string, query: Readonly<Record<string, QueryValue>> | undefined): Target {
    let parsed = this.#parsed.get(base)?.get(path);
    if (parsed === undefined) {
      const url = new URL(base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`));
      parsed = Object.freeze({ origin: url.origin, pathname: url.pathname, path: url.pathname + url.search, search: url.search });
      if (this.#size >= MAX_CACHED_TARGETS) {
        this.#parsed.clear();
        this.#size = 0;
      }
      let paths = this.#parsed.get(base);
      if (paths === undefined) this.#parsed.set(base, (paths = new Map()));
      paths.set(path, parsed);
      this.#size += 1;
    }
    // Without a query the parsed target is the answer itself: nothing is built per request.
    if (query === undefined) return parsed;
    const { origin, pathname, search } = parsed;
    const params = new URLSearchParams(search);
    for (const name in query) {
      const value = query[name];
      if (value !== undefined) params.set(name, String(value));
    }
    const text = params.toString();
    return { origin, pathname, path: text === '' ? pathname : `${pathname}?${text}` };
  }
}

/**
 * Request headers. The common case (the API key, no extra headers or a frozen set of them) reuses
 * one frozen object per body/no-body instead of building it per request; undici only reads it.
 */
export class HeaderBuilder {
  readonly #origin: string | undefined;
  readonly #apiKey: string | undefined;
  readonly #apiKeyHeaders: readonly [Readonly<Record<string, string>>, Readonly<Record<string, string>>];
  /** API-key headers with a constant (frozen) set of extra headers, built once per such set. */
  readonly #withExtra = new WeakMap<object, [Readonly<Record<string, string>>?, Readonly<Record<string, string>>?]>();

  constructor(apiKey: string | undefined, origin: string | undefined) {
    this.#apiKey = apiKey;
    this.#origin = origin;
    this.#apiKeyHeaders = [Object.freeze(this.#build(apiKey, false, undefined)), Object.freeze(this.#build(apiKey, true, undefined))];
  }

  /** Headers for `credential` (sent as `Authorization: Bearer`; undefined = none). */
  headers(credential: string | undefined, hasBody: boolean, extra: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
    if (credential !== this.#apiKey) return this.#build(credential, hasBody, extra);
    const i = hasBody ? 1 : 0;
    if (extra === undefined) return this.#apiKeyHeaders[i];
    if (!Object.isFrozen(extra)) return this.#build(credential, hasBody, extra);
    let built = this.#withExtra.get(extra);
    if (built === undefined) this.#withExtra.set(extra, (built = []));
    return (built[i] ??= Object.freeze(this.#build(credential, hasBody, extra)));
  }

  #build(credential: string | undefined, hasBody: boolean, extra: Readonly<Record<string, string>> | undefined): Record<string, string> {
    const headers: Record<string, string> = { accept: ACCEPT };
    if (hasBody) headers['content-type'] = 'application/json';
    if (this.#origin !== undefined) headers['origin'] = this.#origin;
    for (const [name, value] of Object.entries(extra ?? {})) {
      // Credentials only ever come from the auth mode.
      if (name.toLowerCase() !== 'authorization') headers[name.toLowerCase()] = value;
    }
    if (credential !== undefined) headers['authorization'] = `Bearer ${credential}`;
    return headers;
  }
}
