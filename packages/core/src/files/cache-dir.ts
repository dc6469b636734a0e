import { userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * The user's cache folder: `$XDG_CACHE_HOME`, else `$HOME/.cache`, else `.cache` under the home
 * folder the user database (/etc/passwd) gives this process's user; undefined when there is none
 * (a container run under a uid the database does not know, with no HOME). A relative or empty
 * XDG_CACHE_HOME or HOME is ignored, as the XDG Base Directory specification says: taken as it is,
 * it would put the cache under whatever the working folder of a scheduler's task is, where the next
 * run does not look.
 */
export function userCacheDir(env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  const absolute = (name: string): string | undefined => {
    const value = env[name];
    return value !== undefined && isAbsolute(value) ? value : undefined;
  };
  const xdg = absolute('XDG_CACHE_HOME');
  if (xdg !== undefined) return xdg;
  const home = absolute('HOME') ?? passwdHome();
  return home === undefined ? undefined : join(home, '.cache');
}

/** The home folder the user database gives this process's user, if any. */
function passwdHome(): string | undefined {
  try {
    const home = userInfo().homedir;
    return isAbsolute(home) ? home : undefined;
  } catch {
    // No entry for this uid: os.userInfo throws.
    return undefined;
  }
}
