#!/usr/bin/env node
import { runCommand } from '@dq/core/cli';
import { main } from './main.js';

await runCommand('dq-pg', () => main(process.argv.slice(2)));
