import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Runs `body` after importing exitWhenDone in a fresh Node process; its exit code, stderr and how long it ran. */
function runChild(
  body: string,
  onStarted?: (child: ReturnType<typeof spawn>) => void,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', `import { exitWhenDone } from '@dq/core/cli';\n${body}`], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.once('data', () => onStarted?.(child));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr, ms: Date.now() - started })));
}

describe('a finished CLI process', () => {
  it('exits with its code as soon as nothing is left to run, saying nothing', async () => {
    const run = await runChild(`exitWhenDone('dq-x', 4, 5000);`);
    expect(run).toMatchObject({ code: 4, stderr: '' });
    expect(run.ms).toBeLessThan(3000);
  });

  it('exits with its code after the grace time when something is still open, and says so on one line', async () => {
    // A handle that would keep the process alive for ever, as a socket no server closes does.
    const run = await runChild(`setInterval(() => undefined, 1000);\nexitWhenDone('dq-x', 75, 500);`);
    expect(run.code).toBe(75);
    expect(run.stderr).toBe('dq-x: exiting with 75: something was still open 0.5 s after the run ended (a connection that did not close)\n');
    expect(run.ms).toBeLessThan(5000);
  });

  it('ends at once on a SIGTERM while something is still open, with its own exit code', async () => {
    const run = await runChild(`setInterval(() => undefined, 1000);\nexitWhenDone('dq-x', 3, 20000);\nprocess.stdout.write('summary\\n');`, (child) =>
      child.kill('SIGTERM'),
    );
    expect(run).toMatchObject({ code: 3, signal: null, stderr: '' });
    expect(run.ms).toBeLessThan(10_000);
  });

  it.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)('is not killed by a %s arriving as it exits: its own exit code stands', async (signal) => {
    // A command that removed its signal handlers once done and ends; the signals keep coming every
    // millisecond from its last line on (a scheduler's timeout at the very end).
    for (let i = 0; i < 5; i++) {
      let timer: NodeJS.Timeout | undefined;
      const run = await runChild(
        `await new Promise((r) => setTimeout(r, 100));\nexitWhenDone('dq-x', 4, 5000);\nprocess.stdout.write('summary\\n');`,
        (child) => {
          timer = setInterval(() => child.kill(signal), 1);
        },
      );
      clearInterval(timer);
      expect(run).toMatchObject({ code: 4, signal: null });
    }
  });
});
