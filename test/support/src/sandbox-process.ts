import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SANDBOX_CLI = fileURLToPath(new URL('../../../tools/sandbox/bin/dq-sandbox.js', import.meta.url));

/** The sandbox's `/__admin/stats` answer (the parts tests read). */
export interface SandboxStats {
  requests: Record<string, { total: number; byStatus: Record<string, number> }>;
  billable: Record<string, number>;
}

/** A sandbox in a process of its own, as the platform runs on a machine of its own. */
export interface SandboxProcess {
  url: string;
  child: ChildProcess;
  stats(): Promise<SandboxStats>;
  /** Billable calls of every account so far. */
  billable(): Promise<number>;
  stop(): Promise<void>;
}

/** Starts `dq-sandbox --port 0` with `config` (the sandbox's config file format) in its own process. */
export async function startSandboxProcess(config?: object): Promise<SandboxProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-sandbox-'));
  const args = [SANDBOX_CLI, '--port', '0'];
  if (config) {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify(config));
    args.push('--config', file);
  }
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = createInterface({ input: child.stdout! });
  const [url] = (await once(lines, 'line')) as [string];
  lines.close();
  const stats = async (): Promise<SandboxStats> => (await (await fetch(`${url}/__admin/stats`)).json()) as SandboxStats;
  return {
    url,
    child,
    stats,
    async billable() {
      return Object.values((await stats()).billable).reduce((a, b) => a + b, 0);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
