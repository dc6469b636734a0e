import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI } from '@dq/test-support/kafka';
import type { Running } from '@dq/test-support/kafka';

/** The exit code of `r`, or 'still running after … ms' when it has not ended within `ms`. */
export async function exitWithin(r: Running, ms: number): Promise<number | null | string> {
  return Promise.race([r.exited.then((e) => e.code), sleep(ms).then(() => `still running after ${ms} ms`)]);
}

/** The `dq-kafka: …` lines of `r`'s stderr (its error lines, not the JSON log). */
export function errorLines(r: Running): string[] {
  return r
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('dq-kafka: '));
}

/**
 * The dq-kafka CLI's exit code and output for `args`, with `env` and PATH as its whole environment
 * (no DQ_* variable of this process's reaches it).
 */
export function bareCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
