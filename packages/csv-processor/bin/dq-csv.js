#!/usr/bin/env node
// Launcher committed with its executable bit, so the command works as soon as `npm ci` has built dist/.
import '../dist/cli.js';
