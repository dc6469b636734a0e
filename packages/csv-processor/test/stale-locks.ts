import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
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
    if (owner?.host === hostname() && typeof owner.pid === 'number' && !alive(owner.pid)) await rm(path, { force: true });
  }
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
