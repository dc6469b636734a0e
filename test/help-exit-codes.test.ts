import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const cli = (path: string): string => fileURLToPath(new URL(`../${path}`, import.meta.url));

// The exit codes each command can end with, as the README's table "Exit codes (for Airflow and
// cron)" gives them: a scheduler's author reads them in `--help` as well.
const COMMANDS = [
  { name: 'dq-csv', path: 'packages/csv-processor/dist/cli.js', codes: [0, 1, 2, 3, 4, 5, 75] },
  { name: 'dq-pg', path: 'packages/postgres-cleanser/dist/cli.js', codes: [0, 1, 2, 3, 4, 5, 75] },
  { name: 'dq-kafka', path: 'packages/kafka-enricher/dist/cli.js', codes: [0, 1, 2, 3, 5, 75] },
] as const;

/** The codes the help's "Exit codes:" paragraph explains: each number that opens an item of its list. */
function explainedCodes(help: string): number[] {
  const start = help.indexOf('Exit codes:');
  if (start < 0) throw new Error(`no "Exit codes:" paragraph in the help:\n${help}`);
  const paragraph = help.slice(start + 'Exit codes:'.length).split('\n\n')[0] ?? '';
  return [...paragraph.matchAll(/(?:^|,|\n)\s*(\d+) (?=[A-Za-z])/g)].map((m) => Number(m[1]));
}

describe('--help explains every exit code the command can end with', () => {
  it.each(COMMANDS)('$name --help', async ({ path, codes }) => {
    const { stdout } = await run(process.execPath, [cli(path), '--help']);
    expect(explainedCodes(stdout)).toEqual(codes);
  });
});
