import { spawn, type ChildProcess } from 'node:child_process';

/** How a CLI run ended: its exit code, its output, and when it ended on this process's clock (ms). */
export interface CliExit {
  code: number | null;
  stdout: string;
  stderr: string;
  endedAt: number;
}

/**
 * Runs the Node script `cli` with `args` and `env` added to this process's environment, and
 * resolves when it has ended; `started` gets the child at once (to signal it mid-run).
 */
export function runNode(
  cli: string,
  args: readonly string[],
  env: Record<string, string | undefined> = {},
  started?: (child: ChildProcess) => void,
): Promise<CliExit> {
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  started?.(child);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, endedAt: performance.now() }));
  });
}

/**
 * The last line of `exit`'s stdout holding `marker` (each CLI's summary: `"summary"`, dq-pg's
 * `"type":"summary"`), parsed; throws naming the exit code and stderr's end when there is none.
 */
export function summaryOf(exit: Pick<CliExit, 'code' | 'stdout' | 'stderr'>, marker = '"summary"'): Record<string, any> {
  const line = exit.stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.includes(marker));
  if (!line) throw new Error(`no summary; exit ${exit.code}; stderr: ${exit.stderr.slice(-2000)}`);
  return JSON.parse(line) as Record<string, any>;
}

/** How a command ended: its exit code (null when a signal ended it), the signal, and its output. */
export interface CommandExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command` (a program and its arguments) in `cwd`, with `env` added to this process's
 * environment, or with `env` alone when `bareEnv` is set; killed (SIGKILL) after `timeoutMs`.
 */
export function runCommand(
  command: readonly string[],
  options: { env?: Record<string, string | undefined>; bareEnv?: boolean; cwd?: string; timeoutMs?: number } = {},
): Promise<CommandExit> {
  return new Promise((resolve, reject) => {
    const env = options.bareEnv ? { ...options.env } : { ...process.env, ...options.env };
    const child = spawn(command[0]!, command.slice(1), { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
