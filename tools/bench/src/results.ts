import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** Writes a benchmark's result as `tools/bench/results/<name>.json` (pretty-printed, newline-terminated). */
export async function writeResult(name: string, result: unknown): Promise<void> {
  const dir = fileURLToPath(new URL('../results/', import.meta.url));
  await mkdir(dir, { recursive: true });
  await writeFile(`${dir}${name}.json`, `${JSON.stringify(result, null, 2)}\n`);
}
