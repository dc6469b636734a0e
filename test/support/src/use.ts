import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox, type SandboxOptions } from '@dq/sandbox';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startKafka, type TestKafka } from './kafka.js';
import { useStarted } from './started.js';

export { useStarted };

// Per-file test setup: call at a test file's top level; each registers its own beforeAll/afterAll.

/**
 * A temp folder for every test of the file: its path at once (for module-level constants), the
 * folder made (private, like mkdtemp) before the first test and removed after the last.
 */
export function useTempDir(prefix = 'dq-test-'): string {
  const dir = join(tmpdir(), `${prefix}${randomBytes(6).toString('hex')}`);
  beforeAll(async () => {
    await mkdir(dir, { mode: 0o700 });
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A connector's environment for a sandbox: its URL and the default API key. */
export function sandboxEnv(sandbox: { url: string }): Record<string, string> {
  return { DQ_BASE_URL: sandbox.url, DQ_API_KEY: DEFAULT_API_KEY };
}

/** A sandbox of the file's tests, answering for the started one, with `env()` for a connector's process. */
export type UsedSandbox = Sandbox & { env(): Record<string, string> };

/**
 * The sandbox in this process over real HTTP for every test of the file (`config` as the sandbox
 * takes it; default: its own), started before the first test and closed after the last.
 */
export function useSandbox(config?: object): UsedSandbox {
  return useStarted(
    'the sandbox',
    () => startSandbox(config === undefined ? { port: 0 } : { port: 0, config: config as SandboxOptions['config'] }),
    (s) => s.close(),
    { extra: (it) => ({ env: () => sandboxEnv(it()) }) },
  );
}

/** A Kafka cluster (see {@link startKafka}) for every test of the file, stopped after the last. */
export function useKafka(): TestKafka {
  return useStarted('the Kafka cluster', startKafka, (k) => k.stop());
}

/** After each test, closes what `started()` names, in that order (an engine before the platform it calls), then `forget()`s them. */
export function closeAfterEach(started: () => Array<{ close(): Promise<unknown> } | undefined>, forget: () => void): void {
  afterEach(async () => {
    for (const s of started()) await s?.close();
    forget();
  });
}
