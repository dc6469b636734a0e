import { unwatchAbort, watchAbort, type AbortWatcher } from '../abort-watch.js';

/**
 * Waits `ms` milliseconds; rejects with the signal's reason if it aborts first. The timer is
 * cleared on abort so nothing keeps the process alive. Many sleeps may share one signal (every
 * call of a batch waiting for the throttle): they share its one `abort` listener.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const watcher: AbortWatcher = {
      onCallerAbort(reason) {
        clearTimeout(timer);
        reject(reason);
      },
    };
    const timer = setTimeout(() => {
      if (signal) unwatchAbort(signal, watcher);
      resolve();
    }, ms);
    if (signal) watchAbort(signal, watcher);
  });
}

/**
 * Microseconds on the monotonic clock (CLOCK_MONOTONIC via `process.hrtime`), which every thread
 * and process of one host reads alike, unlike `performance.now()` whose origin is per thread.
 */
export function monotonicMicros(): bigint {
  return process.hrtime.bigint() / 1000n;
}
