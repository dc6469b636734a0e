import { spawn } from 'node:child_process';

/**
 * A command running in a terminal of its own (a pseudo-terminal it has as its controlling terminal,
 * with stdin, stdout and stderr on it), as in an ssh session: {@link runOnTerminal}.
 */
export interface TerminalRun {
  /** What the command wrote to its terminal so far. */
  output(): string;
  /**
   * Closes the terminal, as a dropped ssh connection or a closed window does: the kernel sends the
   * command SIGHUP, and its later writes to the terminal fail.
   */
  hangUp(): void;
  /** How the command ended: its exit code, or the signal that ended it. */
  ended: Promise<{ code: number | null; signal: string | null }>;
}

// Python's pty module gives the child a terminal of its own (a new session, the terminal as its
// controlling one): Node has no pseudo-terminals without a native module. The parent copies the
// terminal's output to its stdout, closes the terminal when a line arrives on its stdin, and prints
// the child's end as its last line on stderr.
const HARNESS = `
import os, sys, pty, select, json, signal
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
open_fd = fd
while True:
    watched = [sys.stdin] + ([open_fd] if open_fd is not None else [])
    ready, _, _ = select.select(watched, [], [], 0.05)
    if open_fd in ready:
        try:
            data = os.read(open_fd, 65536)
        except OSError:
            data = b''
        if data:
            sys.stdout.buffer.write(data); sys.stdout.flush()
    if sys.stdin in ready:
        sys.stdin.readline()
        if open_fd is not None:
            os.close(open_fd); open_fd = None
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
end = {'code': os.WEXITSTATUS(status), 'signal': None} if os.WIFEXITED(status) else {'code': None, 'signal': signal.Signals(os.WTERMSIG(status)).name}
sys.stderr.write(json.dumps(end) + '\\n')
`;

/** Runs `command` with `args` in a terminal of its own (see {@link TerminalRun}); needs `python3`. */
export function runOnTerminal(command: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): TerminalRun {
  const child = spawn('python3', ['-c', HARNESS, command, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.env ? { env: options.env } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let output = '';
  let harness = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (harness += d.toString()));
  const ended = new Promise<{ code: number | null; signal: string | null }>((resolve, reject) => {
    child.on('error', (err) => reject(new Error(`python3 is needed to run a command on a terminal of its own: ${err.message}`)));
    child.on('close', () => {
      const last = harness.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(last) as { code: number | null; signal: string | null });
      } catch {
        reject(new Error(`the terminal harness ended without the command's end: ${harness}`));
      }
    });
  });
  return { output: () => output, hangUp: () => void child.stdin.write('hang up\n'), ended };
}
