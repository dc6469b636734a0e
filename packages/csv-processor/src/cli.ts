#!/usr/bin/env node
import { exitWhenDone } from '@dq/core/cli';
import { main } from './main.js';

exitWhenDone('dq-csv', await main(process.argv.slice(2)));
