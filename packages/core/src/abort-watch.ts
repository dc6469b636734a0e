/**
 * One `abort` listener per caller signal, however many exchanges share it. The engine hands the
 * same signal to every call of a batch; adding and removing an EventTarget listener per attempt
 * costs more than the HTTP exchange's own bookkeeping and trips Node's max-listeners warning.
 */

/** Told when the signal it watches fires. */
export interface AbortWatcher {
  onCallerAbort(reason: unknown): void;
}

const watchers = new WeakMap<AbortSignal, Set<AbortWatcher>>();

/** Calls `watcher.onCallerAbort` when `signal` fires, unless {@link unwatchAbort} came first. */
export function watchAbort(signal: AbortSignal, watcher: AbortWatcher): void {
  let set = watchers.get(signal);
  if (set === undefined) {
    const created = new Set<AbortWatcher>();
    set = created;
    watchers.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        watchers.delete(signal);
        // A watcher may unwatch itself (or others) while settling: iterate over a copy.
        for (const w of [...created]) w.onCallerAbort(signal.reason);
        created.clear();
      },
      { once: true },
    );
  }
  set.add(watcher);
}

/** Stops telling `watcher` about `signal`. */
export function unwatchAbort(signal: AbortSignal, watcher: AbortWatcher): void {
  watchers.get(signal)?.delete(watcher);
}
