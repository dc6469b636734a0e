import { open, stat } from 'node:fs/promises';

/** fsync of a directory so renames in it survive a crash; a no-op where that is not possible. */
export async function syncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // some platforms cannot open or fsync a directory
  } finally {
    await fh?.close();
  }
}

/** Size of a file in bytes, or undefined when it does not exist. */
export async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}
