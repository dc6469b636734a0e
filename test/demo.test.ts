import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { makeSampleCsv } from '@dq/sandbox';

// `npm run demo` as the README describes it: the shipped sample cleaned against the sandbox on a
// free port, the summary on stdout, the cleaned file, rejects, report and screenshot in a new
// temporary folder. Run here as its built entry point, with its own home and temporary folder.

const DEMO = fileURLToPath(new URL('../apps/demo/dist/demo.js', import.meta.url));
const SAMPLE = fileURLToPath(new URL('../apps/demo/addresses.csv', import.meta.url));
const home = await mkdtemp(join(tmpdir(), 'dq-demo-home-'));

afterAll(() => rm(home, { recursive: true, force: true }));

function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [DEMO], {
    env: { PATH: process.env['PATH'], HOME: home, TMPDIR: home, XDG_CACHE_HOME: join(home, 'cache') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('npm run demo', () => {
  it('ships the sample that apps/demo/dist/make-sample.js makes (1,000 rows, seed 7)', async () => {
    expect(await readFile(SAMPLE, 'utf8')).toBe(makeSampleCsv(1000, 7));
  });

  it('cleans every row of the sample, exit 0, and says where the cleaned file, rejects, report and screenshot are', { timeout: 120_000 }, async () => {
    const run = await runDemo();
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('{"event":"summary"')) ?? 'null') as {
      outcome: string;
      rows: number;
      rejects: number;
      byStatus: Record<string, number>;
    };
    expect(summary).toMatchObject({ outcome: 'done', rows: 1000, rejects: 0 });
    expect(Object.values(summary.byStatus).reduce((a, b) => a + b, 0)).toBe(1000);
    const shown = (label: string) => new RegExp(`^${label}:\\s+(\\S.*)$`, 'm').exec(run.stdout)?.[1];
    const cleaned = shown('cleaned file')!;
    const sample = (await readFile(SAMPLE, 'utf8')).trimEnd().split('\n');
    const out = (await readFile(cleaned, 'utf8')).trimEnd().split('\n');
    expect(out).toHaveLength(sample.length);
    // Every input line comes out first in its row, byte for byte, the result columns after it.
    out.forEach((line, i) => expect(line.startsWith(`${sample[i]};`), `row ${i}`).toBe(true));
    expect(existsSync(shown('rejects')!)).toBe(true);
    expect(await readFile(shown('report')!, 'utf8')).toContain('<html');
    // The screenshot needs Debian's chromium (installed by .ci/run); without it the line says why.
    if (existsSync('/usr/bin/chromium')) expect(existsSync(shown('screenshot')!)).toBe(true);
  });
});
