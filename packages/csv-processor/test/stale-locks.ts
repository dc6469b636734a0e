import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { processAlive } from '@dq/core/lock';
import { identityLockFolder } from '../src/run-files.js';

/**
 * Runs killed with kill -9 leave their locks by device and inode in the user's temporary folder
 * (a later run on the same file takes them over). After each test file, the ones made while it ran
 * whose process is gone are removed, so the tests leave none behind; a live run's are left alone.
 */
let started = 0;
beforeAll(() => {
  started = Date.now();
});
afterAll(async () => {
  const folder = identityLockFolder();
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (!name.endsWith('.lock')) continue;
    const path = join(folder, name);
    const made = await stat(path).catch(() => undefined);
    if (!made || made.mtimeMs < started) continue;
    const owner = await readFile(path, 'utf8')
      .then((text) => JSON.parse(text) as { pid?: unknown; host?: unknown })
      .catch(() => undefined);
    if (owner?.host === hostname() && typeof owner.pid === 'number' && !processAlive(owner.pid)) await rm(path, { force: true });
  }
});
