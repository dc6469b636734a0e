/**
 * The `current` pointer of a target: a symlink to the version directory in use, switched by
 * renaming a new symlink over it, so a reader sees either the old or the new version, never none.
 */
import { randomBytes } from 'node:crypto';
import { readlink, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDir } from './fs-sync.js';

/** Name of the pointer inside the target directory. */
export const CURRENT_LINK = 'current';

/** The version `current` points to, or undefined when there is no pointer. */
export async function readCurrent(target: string): Promise<string | undefined> {
  try {
    return await readlink(join(target, CURRENT_LINK));
  } catch {
    return undefined;
  }
}

/** Points `current` at `<target>/<version>` atomically (relative link, so the target can move). */
export async function switchCurrent(target: string, version: string): Promise<void> {
  const tmp = join(target, `.${CURRENT_LINK}.${randomBytes(4).toString('hex')}`);
  await symlink(version, tmp, 'dir');
  try {
    await rename(tmp, join(target, CURRENT_LINK));
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await syncDir(target);
}
