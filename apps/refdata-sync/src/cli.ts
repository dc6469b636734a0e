#!/usr/bin/env node
import { exitWhenDone } from '@dq/core/cli';
import { main } from './cli-main.js';

const ac = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  // First signal: stop cleanly (parts stay for the next run to resume, the lock is released).
  process.once(sig, () => ac.abort(new Error(`received ${sig}`)));
}
const code = await main(process.argv.slice(2), {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  signal: ac.signal,
});
exitWhenDone('dq-refdata', code);
