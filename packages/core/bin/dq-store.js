#!/usr/bin/env node
// Launcher committed with its executable bit, so the command works as soon as `npm ci` has built dist/.
import { runCommand } from '../dist/cli/exit.js';
import { runStoreCli } from '../dist/store/cli.js';

await runCommand('dq-store', () => runStoreCli(process.argv.slice(2)));
