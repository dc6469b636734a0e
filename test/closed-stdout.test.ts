import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A command piped into a reader that stops early (`dq-store info | head -1`, `dq-pg status | head`)
// loses the rest of its output, not its exit code: no EPIPE stack trace, the code stays the command's.
const COMMANDS = [
  ['dq-csv', 'packages/csv-processor/dist/cli.js'],
  ['dq-pg', 'packages/postgres-cleanser/dist/cli.js'],
  ['dq-kafka', 'packages/kafka-enricher/dist/cli.js'],
  ['dq-refdata', 'apps/refdata-sync/dist/cli.js'],
  ['dq-store', 'packages/core/bin/dq-store.js'],
] as const;

describe('stdout closed by its reader', () => {
  it.each(COMMANDS)('%s --help exits 0 without a stack trace', async (_name, path) => {
    const child = spawn(process.execPath, [fileURLToPath(new URL(`../${path}`, import.meta.url)), '--help']);
    // The reader is gone before the command writes: its first write fails with EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
    expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
    expect(stderr).toBe('');
  });
});
