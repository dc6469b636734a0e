import { spawn, type ChildProcess } from 'node:child_process';
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
  /** Settles once the process has exited (after a `child.kill('SIGKILL')`, say). */
  exited: Promise<unknown>;
  stats(): Promise<SandboxStats>;
  /** Billable calls of every account so far. */
  billable(): Promise<number>;
  stop(): Promise<void>;
}

/** Options of {@link startSandboxProcess}. */
export interface SandboxProcessOptions {
  /** Port to listen on; default 0 (a free one). A fixed one is for bringing a killed sandbox back at the same URL. */
  port?: number;
}

/**
 * Starts `dq-sandbox` with `config` (the sandbox's config file format) in its own process; resolves
 * once it listens, rejects if it exits before (a port taken, a bad config).
 */
export async function startSandboxProcess(config?: object, options: SandboxProcessOptions = {}): Promise<SandboxProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'dq-sandbox-'));
  const args = [SANDBOX_CLI, '--port', String(options.port ?? 0)];
  if (config) {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify(config));
    args.push('--config', file);
  }
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const exited = new Promise<unknown>((resolve) => child.once('exit', resolve));
  const lines = createInterface({ input: child.stdout! });
  let url: string;
  try {
    url = await new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`dq-sandbox exited with ${code} before listening`)));
    });
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  } finally {
    lines.close();
  }
  const stats = async (): Promise<SandboxStats> => (await (await fetch(`${url}/__admin/stats`)).json()) as SandboxStats;
  return {
    url,
    child,
    exited,
    stats,
    async billable() {
      return Object.values((await stats()).billable).reduce((a, b) => a + b, 0);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
