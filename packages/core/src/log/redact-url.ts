/**
 * `url` as it may be shown in a message or log: its password replaced by `***` (the user name kept,
 * it tells which login was used), also a password given as a query parameter (`?password=`, which
 * libpq and node-postgres read too) and the client key's passphrase (`sslpassword`), without a
 * trailing `/`; `fallback` when it is not a URL.
 */
export function shownUrl(url: string, fallback: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    for (const name of [...u.searchParams.keys()]) if (SECRET_PARAM.test(name)) u.searchParams.set(name, '***');
    return u.href.replace(/\/$/, '');
  } catch {
    return fallback;
  }
}

/** Query parameters that hold a secret. */
const SECRET_PARAM = /pass(word)?$|secret|token|key$/i;
