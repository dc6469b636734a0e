import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

/**
 * Every test gets a cache folder of its own (XDG_CACHE_HOME), so the result store's default
 * location is never the real home cache, and no test is answered from another test's store.
 * Children spawned with `process.env` inherit it. A test about the store passes `--store` itself.
 */
let dir: string | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dq-test-cache-'));
  process.env['XDG_CACHE_HOME'] = dir;
});
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});
