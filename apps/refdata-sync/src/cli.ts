#!/usr/bin/env node
import { onStopSignals, runCommand } from '@dq/core/cli';
import { main } from './cli-main.js';

const ac = new AbortController();
// The first stop signal (SIGINT, SIGTERM, SIGHUP) stops at once and cleanly: part files stay for
// the next run to resume, the lock is released. A repeated one changes nothing.
const release = onStopSignals((signal) => {
  if (!ac.signal.aborted) ac.abort(new Error(`received ${signal}`));
});
await runCommand('dq-refdata', () =>
  main(process.argv.slice(2), {
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
    env: process.env,
    signal: ac.signal,
  }).finally(release),
);
