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
