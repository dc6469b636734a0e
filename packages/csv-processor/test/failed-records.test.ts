import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { makeSampleCsv } from '@dq/sandbox';
import { zeroByStatus } from '@dq/core/engine';
import { describe, expect, it } from 'vitest';
import { billable, completed, runCli, sampleArgs, startCli, summaryOf, unlimited, useSandbox, useTempDir } from './helpers.js';
import type { RunSummary } from '../src/run.js';
import { failedRecordsLine } from '../src/summary.js';

// A run that completes with more failed records than --max-failed allows exits 4: a scheduler's
// log (stderr) says so in one line, naming the rejects file, not only the JSON summary on stdout.

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

describe('a run done with failed records past --max-failed', () => {
  it('exits 4 with one line on stderr naming the counts, the rejects file and what to do', { timeout: 60_000 }, async () => {
    // A CSV file read as NDJSON (a wrong --format): every line is rejected.
    const input = join(dir, 'customers.csv');
    await writeFile(input, makeSampleCsv(30, 8));
    const output = join(dir, 'customers.clean.ndjson');
    const run = await runCli(sampleArgs(input, output, '--store', 'off', '--format', 'ndjson'), sandbox.env());
    expect(run.code, run.stderr).toBe(4);
    expect(summaryOf(run)).toMatchObject({ outcome: 'done', exitCode: 4, rows: 0, rejects: 31 });
    expect(billable(sandbox)).toBe(0);
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('dq-csv: '));
    expect(lines).toEqual([
      `dq-csv: records-failed: 31 of 31 input records failed (31 rejected, in ${join(dir, 'customers.clean.rejects.csv')}, with line and reason; 0 unavailable): ` +
        '100% is over --max-failed 0; no record could be read: check --format, --delimiter and --encoding against the input',
    ]);
  });

  it('some rows rejected: the line says to correct them; within --max-failed, no line and exit 0', { timeout: 60_000 }, async () => {
    const lines = makeSampleCsv(20, 9).trimEnd().split('\n');
    lines[5] = 'K9;only;three';
    const input = join(dir, 'ragged.csv');
    await writeFile(input, lines.join('\n') + '\n');
    const over = await runCli(sampleArgs(input, join(dir, 'ragged.clean.csv'), '--store', 'off'), sandbox.env());
    expect(over.code, over.stderr).toBe(4);
    expect(over.stderr).toContain(
      `dq-csv: records-failed: 1 of 20 input records failed (1 rejected, in ${join(dir, 'ragged.clean.rejects.csv')}, with line and reason; 0 unavailable): ` +
        '5% is over --max-failed 0; correct the rejected lines in the input and rerun',
    );
    const within = await runCli(sampleArgs(input, join(dir, 'ragged.within.csv'), '--store', 'off', '--max-failed', '0.1'), sandbox.env());
    expect(within.code, within.stderr).toBe(0);
    expect(within.stderr).not.toContain('records-failed');
  });
});

describe('a run done with no record answered', () => {
  it('exits 75 with one line on stderr saying the platform failed and to rerun later', { timeout: 60_000 }, async () => {
    // A platform that answers every call with 200 and a body that is no result: every record is unavailable.
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'x-service-request-id': 'odd-0001' });
        res.end('{"weird":true}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const input = join(dir, 'odd.csv');
      await writeFile(input, makeSampleCsv(10, 11));
      const output = join(dir, 'odd.clean.csv');
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const run = await runCli(sampleArgs(input, output, '--store', 'off'), { ...sandbox.env(), DQ_BASE_URL: url });
      expect(run.code, run.stderr).toBe(75);
      expect(summaryOf(run)).toMatchObject({ outcome: 'done', exitCode: 75 });
      const lines = run.stderr.split('\n').filter((l) => l.startsWith('dq-csv: '));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^dq-csv: records-unavailable: none of the 10 records the platform could answer got a usable answer \\(marked unavailable in ${output.replace(/[.]/g, '\\.')}, `,
        ),
      );
      expect(lines[0]).toContain('rerun the same command later');
    } finally {
      server.close();
    }
  });
});

describe('the line of a run with no usable answer', () => {
  it('counts only the records the platform could answer, and names the others (a country without data, invalid input)', () => {
    const byStatus = { ...zeroByStatus(), unavailable: 2, 'unsupported-country': 198 };
    const summary = {
      outcome: 'done',
      exitCode: 75,
      totals: { rows: 200, rejects: 0, byStatus },
      paths: { output: '/data/out.csv', rejects: '/data/out.rejects.csv' },
      failedShare: 0.01,
    } as unknown as RunSummary;
    expect(failedRecordsLine(summary, 0)).toBe(
      'dq-csv: records-unavailable: none of the 2 records the platform could answer got a usable answer; the others are 198 of a country the platform has no reference data for ' +
        '(marked unavailable in /data/out.csv, the reasons in the warnings above): the platform failed, not the input; rerun the same command later\n',
    );
  });
});

describe('stdout closed by its reader', () => {
  it('a run whose stdout reader went away (| head) still exits with the run outcome, without a stack trace', { timeout: 60_000 }, async () => {
    const input = join(dir, 'piped.csv');
    await writeFile(input, makeSampleCsv(20, 10));
    const output = join(dir, 'piped.clean.csv');
    const child = startCli(sampleArgs(input, output, '--store', 'off'), sandbox.env());
    child.stdout.destroy();
    const run = await completed(child);
    expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({ code: 0, signal: null });
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect((await readFile(output, 'utf8')).trimEnd().split('\n')).toHaveLength(21);
  });
});
