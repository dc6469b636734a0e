/**
 * The `current` pointer of a target: a symlink to the version directory in use, switched by
 * renaming a new symlink over it, so a reader sees either the old or the new version, never none.
 */
import { randomBytes } from 'node:crypto';
import { lstat, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from './errors.js';
import { syncDir } from './fs-sync.js';

/** Name of the pointer inside the target directory. */
export const CURRENT_LINK = 'current';

/** A new `current` link before its rename ({@link switchCurrent}). */
const LEFT_LINK = new RegExp(`^\\.${CURRENT_LINK}\\.[0-9a-f]{8}$`);

/** The version `current` points to, or undefined when there is no pointer. */
export async function readCurrent(target: string): Promise<string | undefined> {
  try {
    return await readlink(join(target, CURRENT_LINK));
  } catch {
    return undefined;
  }
}

/**
 * Points `current` at `<target>/<version>` atomically (relative link, so the target can move). A
 * directory or file a person put where the link belongs is a usage error: it is neither replaced
 * nor merged into.
 */
export async function switchCurrent(target: string, version: string): Promise<void> {
  const link = join(target, CURRENT_LINK);
  const st = await lstat(link).catch(() => undefined);
  if (st !== undefined && !st.isSymbolicLink()) {
    throw new UsageError(
      `${link} is ${st.isDirectory() ? 'a directory' : 'a file'}, not the symbolic link dq-refdata keeps there to point at the version in use; move it away, then sync again (the files placed are kept)`,
    );
  }
  // A switch killed between making its new link and renaming it left that link behind; the sync
  // holds the target's lock, so no other switch is under way: such links are removed.
  for (const name of await readdir(target).catch(() => [] as string[])) {
    if (!LEFT_LINK.test(name)) continue;
    const left = join(target, name);
    if ((await lstat(left).catch(() => undefined))?.isSymbolicLink()) await rm(left, { force: true });
  }
  const tmp = join(target, `.${CURRENT_LINK}.${randomBytes(4).toString('hex')}`);
  await symlink(version, tmp, 'dir');
  try {
    await rename(tmp, link);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await syncDir(target);
}
