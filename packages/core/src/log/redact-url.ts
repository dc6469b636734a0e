/**
 * `url` as it may be shown in a message or log: its password replaced by `***` (the user name kept,
 * it tells which login was used), without a trailing `/`; `fallback` when it is not a URL.
 */
export function shownUrl(url: string, fallback: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.href.replace(/\/$/, '');
  } catch {
    return fallback;
  }
}
