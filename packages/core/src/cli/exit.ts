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
  // The work is done and its outcome printed: a SIGINT or SIGTERM now (a scheduler's timeout, a
  // second Ctrl-C) has nothing left to stop; it ends the process at once, with the command's own
  // exit code, not 130 or 143. Node ends a process whose loop drained by tearing down its signal
  // handlers first, which leaves a window of some milliseconds in which such a signal kills it all
  // the same: process.exit from `beforeExit` (the loop drained, nothing left to run) has none.
  const now = (): void => process.exit(code);
  process.on('SIGINT', now);
  process.on('SIGTERM', now);
  process.once('beforeExit', now);
  setTimeout(() => {
    process.stderr.write(`${name}: exiting with ${code}: something was still open ${graceMs / 1000} s after the run ended (a connection that did not close)\n`);
    process.exit(code);
  }, graceMs).unref();
}

/**
 * Runs a CLI's `main` and ends the process with its exit code ({@link exitWhenDone}). A reader of
 * stdout that went away (`| head`) costs what was left to print, not the command: the EPIPE of the
 * closed pipe is ignored, so no stack trace is printed and the exit code stays the command's (its
 * files and state are written all the same). Any other error of stdout is thrown as before.
 */
export async function runCommand(name: string, main: () => Promise<number>): Promise<void> {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
  exitWhenDone(name, await main());
}
