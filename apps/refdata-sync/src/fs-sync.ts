import { stat } from 'node:fs/promises';

export { syncDir } from '@dq/core';

/** Size of a file in bytes, or undefined when it does not exist. */
export async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}
