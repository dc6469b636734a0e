#!/usr/bin/env node
import { runCommand } from '@dq/core/cli';
import { main } from './cli-main.js';

const ac = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  // First signal: stop cleanly (parts stay for the next run to resume, the lock is released).
  process.once(sig, () => ac.abort(new Error(`received ${sig}`)));
}
await runCommand('dq-refdata', () =>
  main(process.argv.slice(2), {
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
    env: process.env,
    signal: ac.signal,
  }),
);
