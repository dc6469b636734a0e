import { exitProcess, ignoreGoneReaders, onStopSignals } from './stop-signals.js';

/** How long a finished CLI waits for the event loop to drain before it exits all the same. */
const EXIT_GRACE_MS = 10_000;

/**
 * Ends a CLI whose work is done with `code`: the process exits as soon as nothing is left to run,
 * and at the latest `graceMs` later. A connection a library left open (a server that stopped
 * answering the goodbye, say) must not keep a scheduler's task running after its summary; when
 * that happens, one line on stderr says so.
 */
export function exitWhenDone(name: string, code: number, graceMs = EXIT_GRACE_MS): void {
  process.exitCode = code;
  // The work is done and its outcome printed: a stop signal now (a scheduler's timeout, a second
  // Ctrl-C, the terminal closed) has nothing left to stop; it ends the process at once, with the
  // command's own exit code, not 130, 143 or 129. Node ends a process whose loop drained by tearing
  // down its signal handlers first, which leaves a window of some milliseconds in which such a
  // signal kills it all the same: exiting from `beforeExit` (the loop drained, nothing left to run)
  // has none.
  const now = (): void => exitProcess(code);
  onStopSignals(now);
  process.once('beforeExit', now);
  setTimeout(() => {
    process.stderr.write(`${name}: exiting with ${code}: something was still open ${graceMs / 1000} s after the run ended (a connection that did not close)\n`);
    exitProcess(code);
  }, graceMs).unref();
}

/**
 * Runs a CLI's `main` and ends the process with its exit code ({@link exitWhenDone}). A reader of
 * stdout or stderr that went away (`| head`, a terminal that hung up) costs what was left to print,
 * not the command: no stack trace, and the exit code stays the command's, its files and state
 * written all the same ({@link ignoreGoneReaders}). Any other error of those streams is thrown.
 */
export async function runCommand(name: string, main: () => Promise<number>): Promise<void> {
  ignoreGoneReaders(process.stdout);
  ignoreGoneReaders(process.stderr);
  exitWhenDone(name, await main());
}
