import { onStopSignals } from '@dq/core/cli';

/**
 * SIGINT, SIGTERM and SIGHUP (core's onStopSignals) for a dq-pg command that stops in two steps (cleanse, rollback, review
 * apply): the first signal asks it to stop once the work under way is written (`stop`), a second
 * to end now, that work not written (`stopNow`). Every signal is handled for as long as the
 * command runs: with a one-time handler a repeated signal (Ctrl-C pressed again, a supervisor
 * signalling twice) would kill the process with no summary and an exit code the README's table
 * does not have. Once the command has returned, core's `exitWhenDone` handles them.
 */
export interface StopSignals {
  /** Aborted by the first signal, with `<reason> SIGTERM` (say). */
  readonly stop: AbortSignal;
  /** Aborted by the second, with `<reason> a second SIGINT` (say). */
  readonly stopNow: AbortSignal;
  /** Stops handling the signals (the command is done). */
  release(): void;
}

/**
 * Starts handling the stop signals; `say` gets the line each signal prints (`SIGTERM: <first>`,
 * `second SIGINT: <second>`), `reason` starts the abort reasons' messages (`interrupted by`, `by`).
 */
export function stopSignals(say: (text: string) => void, words: { first: string; second: string; reason: string }): StopSignals {
  const stop = new AbortController();
  const stopNow = new AbortController();
  const release = onStopSignals((signal) => {
    if (!stop.signal.aborted) {
      say(`${signal}: ${words.first}`);
      stop.abort(new Error(`${words.reason} ${signal}`));
    } else if (!stopNow.signal.aborted) {
      say(`second ${signal}: ${words.second}`);
      stopNow.abort(new Error(`${words.reason} a second ${signal}`));
    }
  });
  return { stop: stop.signal, stopNow: stopNow.signal, release };
}
