/** A response as the tests look at it: plain `fetch`, none of the project's client code. */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  body: Record<string, unknown> & { [key: string]: any };
}

export interface CallOptions {
  method?: string;
  /** Sent as JSON with Content-Type application/json unless `raw` is given. */
  json?: unknown;
  /** Sent verbatim. */
  raw?: string;
  headers?: Record<string, string>;
  /** Bearer token for the Authorization header. */
  bearer?: string;
}

/** One HTTP request with the global fetch. */
export async function call(base: string, path: string, opts: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers['content-type'] ??= 'application/json';
  } else if (opts.raw !== undefined) {
    body = opts.raw;
  }
  if (opts.bearer !== undefined) headers['authorization'] = `Bearer ${opts.bearer}`;
  const res = await fetch(base + path, { method: opts.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/** A German address known to the sandbox's reference data. */
export const BERLIN = { street: 'Unter den Linden', houseNumber: '1', postalCode: '10117', locality: 'Berlin', country: 'DE' };
