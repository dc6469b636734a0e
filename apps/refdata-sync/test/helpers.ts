import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSandbox, DEFAULT_API_KEY, type Sandbox } from '@dq/sandbox';
import { resolveSyncConfig, type SyncConfig } from '../src/index.js';

export { DEFAULT_API_KEY };

/** A sandbox whose download store gets `download` options. */
export function sandboxWith(download: Record<string, unknown> = {}, seed = 11): Promise<Sandbox> {
  return startSandbox({
    port: 0,
    seed,
    config: { accounts: [{ id: 'refdata', apiKeys: [DEFAULT_API_KEY], plan: { quota: null, validUntil: null } }], download },
  });
}

const created: string[] = [];

/** A not yet existing target directory inside a new temporary directory. */
export function freshTarget(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dq-refdata-'));
  created.push(dir);
  return join(dir, 'target');
}

/** Removes every directory {@link freshTarget} created (call in afterAll). */
export function removeTargets(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** The subscription the tests sync: post (two levels), autocompletion and phone for DE, AT, INT_EUROPE. */
export function syncConfig(url: string, target: string, extra: Record<string, unknown> = {}): SyncConfig {
  return resolveSyncConfig({
    downloadUrl: url,
    apiKey: DEFAULT_API_KEY,
    target,
    products: 'post,autocompletion,phone',
    countries: 'DE,AT,INT_EUROPE',
    release: 'release-v3',
    platform: 'linux_x64',
    levels: '001,002',
    ...extra,
  });
}

/** Download requests the sandbox has answered so far. */
export function downloadRequests(sandbox: Sandbox): number {
  return sandbox.stats().requests['download']?.total ?? 0;
}

/** The built CLI. */
export const CLI_BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

/** Runs the CLI with `args` and only PATH and `env` in its environment; resolves with its exit code and output. */
export function runCli(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI_BIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, ...(cwd ? { cwd } : {}) }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** CLI arguments of a small sync (post level 001 for DE and AT) into `target`; the download URL comes from the caller. */
export function syncFlags(target: string, release = 'release-v3'): string[] {
  return ['sync', '--target', target, '--products', 'post', '--countries', 'DE,AT', '--release', release, '--platform', 'linux_x64'];
}
