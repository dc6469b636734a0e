import { afterAll, beforeAll } from 'vitest';

/**
 * Something a test file starts once (a server, a cluster): `start` runs before the file's first test
 * (within `timeoutMs`), `stop` after its last. Returns a stand-in to keep at module level whose
 * properties and methods are the started thing's, read when used (inside a test or hook); `extra`
 * adds members of the stand-in's own, computed from the started thing.
 */
export function useStarted<T extends object, X extends object = object>(
  what: string,
  start: () => Promise<T>,
  stop: (started: T) => Promise<unknown>,
  options: { timeoutMs?: number; extra?: (started: () => T) => X } = {},
): T & X {
  let started: T | undefined;
  beforeAll(async () => {
    started = await start();
  }, options.timeoutMs);
  afterAll(async () => {
    if (started) await stop(started);
  });
  const it = (): T => {
    if (!started) throw new Error(`${what} is not started yet (use it inside a test or hook)`);
    return started;
  };
  const extra = options.extra?.(it) ?? ({} as X);
  return new Proxy(extra, {
    get(own, prop) {
      if (Object.hasOwn(own, prop)) return (own as Record<PropertyKey, unknown>)[prop];
      const target = it();
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as T & X;
}
