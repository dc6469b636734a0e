import { closeSync, openSync } from 'node:fs';
import { isatty } from 'node:tty';

/**
 * The signals that ask a command to stop, handled alike by every CLI of the project (README "Exit
 * codes"): SIGINT (Ctrl-C), SIGTERM (a scheduler's or supervisor's stop) and SIGHUP (the terminal
 * the command runs in closed: an ssh connection dropped, a window closed). Node ends a process on
 * SIGHUP at once by default, as a kill -9 would; handled, it stops at a checkpoint like SIGTERM.
 * Node also turns an ignored SIGHUP back to its default when it starts, so `nohup` does not keep a
 * run alive after logout: the README says to start it with `setsid` (or in tmux, screen or a
 * scheduler) instead.
 */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/**
 * Calls `handler` for every stop signal until the returned function is called. Every signal is
 * handled for as long as the command runs: with a one-time handler a repeated signal (Ctrl-C
 * pressed again, a supervisor signalling twice) would kill the process with no summary and an exit
 * code the README's table does not have. What a repeated signal does is the handler's to decide.
 */
export function onStopSignals(handler: (signal: StopSignal) => void): () => void {
  const listeners = STOP_SIGNALS.map((signal) => [signal, () => handler(signal)] as const);
  for (const [signal, listener] of listeners) process.on(signal, listener);
  return () => {
    for (const [signal, listener] of listeners) process.off(signal, listener);
  };
}

/** Which of stdin, stdout and stderr were a terminal when the command started. */
const startedOnTerminal = [0, 1, 2].map((fd) => isatty(fd));

/**
 * Ends the process with `code`. A standard stream whose terminal hung up (an ssh connection that
 * dropped, a closed window) gets /dev/null in its place first: Node restores each terminal's
 * settings as it exits and aborts (SIGABRT, a core file) when that terminal is gone, and it leaves
 * alone a descriptor that names another file by then.
 */
export function exitProcess(code: number): never {
  for (const fd of [0, 1, 2]) {
    if (!startedOnTerminal[fd] || isatty(fd)) continue;
    try {
      closeSync(fd);
      // The lowest free descriptor: the one just closed (nothing else opens files at this point).
      openSync('/dev/null', fd === 0 ? 'r' : 'w');
    } catch {
      // Nothing better to do on the way out.
    }
  }
  return process.exit(code);
}

/**
 * Errors of writing to stdout or stderr that cost what was left to print, not the command: the
 * reader of a pipe went away (EPIPE: `| head`), or the terminal hung up (EIO). The run's files and
 * state are written all the same, and its exit code stands.
 */
export function ignoreGoneReaders(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'EIO') throw err;
  });
}
