#!/usr/bin/env node
// Regenerates apps/demo/addresses.csv: node apps/demo/dist/make-sample.js [rows] [seed]
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { makeSampleCsv } from '@dq/sandbox';

const rows = Number(process.argv[2] ?? 1000);
const seed = Number(process.argv[3] ?? 7);
const target = fileURLToPath(new URL('../addresses.csv', import.meta.url));
await writeFile(target, makeSampleCsv(rows, seed), 'utf8');
process.stdout.write(`wrote ${rows} rows to ${target}\n`);
