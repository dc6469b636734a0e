import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openReport } from '@dq/core/report-browser';
import type { Browser } from '@dq/core/report-browser';
import { startSandbox } from '@dq/sandbox';
import type { Sandbox } from '@dq/sandbox';
import { makeSampleCsv, SAMPLE_MAP } from '@dq/sandbox';
import { CLI, completed, readCsv, runCli, summaryOf, tempDir } from './helpers.js';

const KEY = 'report-test-secret-key-7c1e';
const EVIL = '<script>alert(1)</script>Hauptstr. 5';

let dir: string;
let cleanup: () => Promise<void>;
let sandbox: Sandbox;
let launched: Promise<Browser> | undefined;
/** Chromium, started by the test on first use: when it is missing, every test fails saying how to install it (nothing is skipped). */
const chromium = (): Promise<Browser> => (launched ??= launchChromium());

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
  sandbox = await startSandbox({ port: 0, config: { accounts: [{ id: 'r', apiKeys: [KEY] }] } });
});
afterAll(async () => {
  await (await launched?.catch(() => undefined))?.close();
  await sandbox?.close();
  await cleanup();
});

/** The summary's value at a data-metric path, as the page's data-value would spell it. */
function at(summary: Record<string, unknown>, path: string): string {
  const v = path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)?.[k], summary);
  return String(v);
}

describe('dq-csv validate --report', () => {
  it("writes a self-contained page whose numbers are the JSON summary's, with corrections as the output has them", async () => {
    const input = join(dir, 'customers.csv');
    const sample = makeSampleCsv(200, 3).replace(/\n$/, '');
    await writeFile(input, `${sample}\nK999998;Evil <b>Corp</b>;${EVIL};10115;Berlin;DE;;\nK999999;"broken\n`);
    const output = join(dir, 'customers.clean.csv');
    const report = join(dir, 'run.html');
    const map = Object.entries(SAMPLE_MAP)
      .map(([f, c]) => `${f}=${c}`)
      .join(',');
    const run = await runCli(
      ['validate', '--input', input, '--output', output, '--delimiter', ';', '--map', map, '--country', 'DE', '--max-failed', '0.05', '--report', report],
      { DQ_BASE_URL: sandbox.url, DQ_API_KEY: KEY },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`report written to ${report}`);
    const summary = summaryOf(run);

    const page = await openReport(await chromium(), report);
    expect(page.consoleErrors).toEqual([]);
    expect(page.requests).toEqual([]);
    expect(page.scripts).toBe(0);
    expect(page.overflowsPhone).toBe(false);

    // Every marked number is the summary's, and every count of the summary is on the page.
    for (const [path, values] of Object.entries(page.metrics)) for (const v of values) expect(v, path).toBe(at(summary, path));
    const required = [
      'rows',
      'rejects',
      'apiCalls',
      'callsSavedByDedup',
      'callsSavedByCache',
      'retries',
      'durationMs',
      ...Object.keys(summary.byStatus).map((s) => `byStatus.${s}`),
      ...Object.keys(summary.byClass).map((c) => `byClass.${c}`),
    ];
    for (const path of required) expect(page.metrics[path], path).toBeDefined();
    expect(summary.rejects).toBe(1);
    expect(page.details['rate.calls']).toEqual([String(summary.apiCalls)]);
    expect(page.details['rate.limit']).toEqual(['100']);

    // Corrections per field: counted independently from the output file (input column vs result column, accepted rows).
    const { header, rows } = await readCsv(output, { delimiter: ';' });
    const col = (name: string) => header.indexOf(name);
    const accepted = rows.filter((r) => r[col('dq_status')] === 'accepted');
    const changed = (input: string, result: string) => accepted.filter((r) => (r[col(result)] ?? '') !== '' && r[col(result)] !== r[col(input)]).length;
    const postal = changed('plz', 'dq_postal_code');
    const locality = changed('ort', 'dq_locality');
    expect(postal + locality).toBeGreaterThan(0);
    expect(page.details['corrections.postalCode'] ?? ['0']).toEqual([String(postal)]);
    expect(page.details['corrections.locality'] ?? ['0']).toEqual([String(locality)]);

    // User values are text; the review command and the reject are there; no secret is.
    expect(page.text).toContain('dq-csv review export --input');
    expect(page.text).toContain('broken-quoting');
    const html = await readFile(report, 'utf8');
    expect(html).not.toContain(KEY);
    expect(html).not.toContain('<script>');
    if (page.text.includes('alert(1)')) expect(page.text).toContain('<script>alert(1)</script>');
  });

  it('writes the report of a run the quota stopped (exit 3): what stopped it, and the counts so far', async () => {
    const limited = await startSandbox({ port: 0, config: { accounts: [{ id: 'q', apiKeys: [KEY], plan: { quota: 40, validUntil: null } }] } });
    try {
      const input = join(dir, 'quota.csv');
      await writeFile(input, makeSampleCsv(300, 5));
      const report = join(dir, 'quota.html');
      const map = Object.entries(SAMPLE_MAP)
        .map(([f, c]) => `${f}=${c}`)
        .join(',');
      const run = await runCli(
        [
          'validate',
          '--input',
          input,
          '--output',
          join(dir, 'quota.out.csv'),
          '--delimiter',
          ';',
          '--map',
          map,
          '--country',
          'DE',
          '--batch-size',
          '50',
          '--report',
          report,
        ],
        { DQ_BASE_URL: limited.url, DQ_API_KEY: KEY },
      );
      expect(run.code, run.stderr).toBe(3);
      const summary = summaryOf(run);
      expect(summary.outcome).toBe('stopped');
      const page = await openReport(await chromium(), report);
      expect(page.consoleErrors).toEqual([]);
      expect(page.requests).toEqual([]);
      for (const [path, values] of Object.entries(page.metrics)) for (const v of values) expect(v, path).toBe(at(summary, path));
      expect(page.metrics['exitCode']).toContain('3');
      expect(page.metrics['error.code']).toEqual([summary.error.code]);
      expect(page.text).toContain('The run stopped');
      expect(await readFile(report, 'utf8')).not.toContain(KEY);
    } finally {
      await limited.close();
    }
  });

  it('refuses a report path in a missing folder before the run, naming the flag (exit 2)', async () => {
    const before = sandbox.stats().requests['batch']?.total ?? 0;
    const input = join(dir, 'small.csv');
    await writeFile(input, 'strasse;plz;ort\nHauptstr. 5;10115;Berlin\n');
    const run = await runCli(
      [
        'validate',
        '--input',
        input,
        '--output',
        join(dir, 'small.out.csv'),
        '--delimiter',
        ';',
        '--map',
        'addressLine=strasse,postalCode=plz,locality=ort',
        '--report',
        join(dir, 'nope', 'r.html'),
      ],
      { DQ_BASE_URL: sandbox.url, DQ_API_KEY: KEY },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--report');
    expect(sandbox.stats().requests['batch']?.total ?? 0).toBe(before);
  });

  // A read-only file system (mounted in a mount namespace of the run's own: needs root) stops
  // root too, which a folder's mode would not.
  it.skipIf(process.getuid?.() !== 0)('refuses a report path in a folder it cannot write before the run (exit 2)', async () => {
    const before = sandbox.stats().requests['batch']?.total ?? 0;
    const input = join(dir, 'small.csv');
    await writeFile(input, 'strasse;plz;ort\nHauptstr. 5;10115;Berlin\n');
    const readOnly = join(dir, 'read-only');
    await mkdir(readOnly);
    const args = [
      'validate',
      '--input',
      input,
      '--output',
      join(dir, 'ro.out.csv'),
      '--delimiter',
      ';',
      '--map',
      'addressLine=strasse,postalCode=plz,locality=ort',
    ];
    const child = spawn(
      'unshare',
      [
        '-m',
        'sh',
        '-c',
        'mount -t tmpfs -o ro tmpfs "$0" || exit 90; shift; exec "$@"',
        readOnly,
        'x',
        process.execPath,
        CLI,
        ...args,
        '--report',
        join(readOnly, 'r.html'),
      ],
      {
        env: { ...process.env, DQ_BASE_URL: sandbox.url, DQ_API_KEY: KEY },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const run = await completed(child);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`dq-csv: usage: --report: the folder ${readOnly} cannot be written (EROFS)`);
    expect(sandbox.stats().requests['batch']?.total ?? 0).toBe(before);
  });
});
