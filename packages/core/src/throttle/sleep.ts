/**
 * Waits `ms` milliseconds; rejects with the signal's reason if it aborts first. The timer is
 * cleared on abort so nothing keeps the process alive.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Microseconds on the monotonic clock (CLOCK_MONOTONIC via `process.hrtime`), which every thread
 * and process of one host reads alike, unlike `performance.now()` whose origin is per thread.
 */
export function monotonicMicros(): bigint {
  return process.hrtime.bigint() / 1000n;
}
