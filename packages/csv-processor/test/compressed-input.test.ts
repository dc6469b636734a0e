import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { makeSampleCsv } from '@dq/sandbox';
import { describe, expect, it } from 'vitest';
import { openSource, type SourceItem } from '../src/source/index.js';
import { startSandboxProcess } from '@dq/test-support/sandbox-process';
import { checkpointPast, comparable, completed, runCli, sampleArgs as sample, sandboxEnv, startCli, unlimited, useSandbox, useTempDir } from './helpers.js';

// Exports often arrive compressed (customers.csv.gz): dq-csv reads them as they are, without a
// decompressed copy, and resumes inside them (offsets in the decompressed text).

const dir = useTempDir();
const sandbox = useSandbox(unlimited());
/** The sample's arguments, not paced: the sandbox here enforces no rate limit. */
const sampleArgs = (input: string, output: string, ...more: string[]): string[] => sample(input, output, '--rate-limit', '0', ...more);

describe('dq-csv on a gzip-compressed input', () => {
  it('cleans customers.csv.gz like the same file uncompressed, and writes plain text', async () => {
    const text = makeSampleCsv(300, 21);
    const plain = join(dir, 'customers.csv');
    const gz = join(dir, 'customers.csv.gz');
    await writeFile(plain, text);
    await writeFile(gz, gzipSync(text));
    const a = await runCli(sampleArgs(plain, join(dir, 'plain.out.csv'), '--store', 'off'), sandboxEnv(sandbox));
    const b = await runCli(sampleArgs(gz, join(dir, 'gz.out.csv'), '--store', 'off'), sandboxEnv(sandbox));
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(await comparable(join(dir, 'gz.out.csv'))).toEqual(await comparable(join(dir, 'plain.out.csv')));
    expect((await readFile(join(dir, 'gz.out.csv'))).subarray(0, 2)).not.toEqual(Buffer.from([0x1f, 0x8b]));
  }, 60_000);

  it('reads events.ndjson.gz as NDJSON (the format from the name without .gz)', async () => {
    const lines = Array.from({ length: 20 }, (_, i) =>
      JSON.stringify({ id: i, street: 'Hauptstraße', houseNumber: String(1 + i), postalCode: '10115', locality: 'Berlin', country: 'DE' }),
    );
    const input = join(dir, 'events.ndjson.gz');
    await writeFile(input, gzipSync(`${lines.join('\n')}\n`));
    const output = join(dir, 'events.out.ndjson');
    const run = await runCli(['validate', '--input', input, '--output', output, '--store', 'off', '--rate-limit', '0'], sandboxEnv(sandbox));
    expect(run.code, run.stderr).toBe(0);
    const out = (await readFile(output, 'utf8')).trim().split('\n');
    expect(out.map((l) => (JSON.parse(l) as { id: number }).id)).toEqual(lines.map((_, i) => i));
  }, 60_000);

  it('resumes a gzip input killed mid-run to the same output as an uninterrupted run', async () => {
    const text = makeSampleCsv(1500, 22);
    const input = join(dir, 'big.csv.gz');
    await writeFile(input, gzipSync(text));
    const reference = join(dir, 'big.reference.csv');
    const ref = await runCli(sampleArgs(input, reference, '--store', 'off'), sandboxEnv(sandbox));
    expect(ref.code, ref.stderr).toBe(0);

    // A little latency per call, so the run can be killed in its middle.
    const slow = await startSandboxProcess(unlimited({ faults: { batch: { latencyMs: 3 } } }));
    try {
      const output = join(dir, 'big.out.csv');
      const args = sampleArgs(input, output, '--batch-size', '100', '--concurrency', '4', '--store', join(dir, 'store'));
      const child = startCli(args, sandboxEnv(slow));
      const first = completed(child);
      await checkpointPast(output, 300, first);
      child.kill('SIGKILL');
      await first;
      const resumed = await runCli([...args, '--resume'], sandboxEnv(slow));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(await comparable(output)).toEqual(await comparable(reference));
    } finally {
      await slow.stop();
    }
  }, 120_000);

  it('reads a gzip-compressed UTF-16 file, and from a checkpointed position the same records as an uninterrupted read', async () => {
    const text = 'id;strasse;plz;ort\n' + Array.from({ length: 2000 }, (_, i) => `${i};Straße ${i} 𝄞;10115;Berlin`).join('\n') + '\n';
    const input = join(dir, 'utf16.csv.gz');
    await writeFile(input, gzipSync(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])));
    const cells = (items: SourceItem[]) => items.map((i) => (i.kind === 'row' ? i.cells : i));
    const all: SourceItem[] = [];
    for await (const item of (await openSource({ path: input, format: 'csv', delimiter: ';' })).items) all.push(item);
    expect(all).toHaveLength(2000);
    expect(cells(all.slice(1999))).toEqual([['1999', 'Straße 1999 𝄞', '10115', 'Berlin']]);
    const rest: SourceItem[] = [];
    for await (const item of (await openSource({ path: input, format: 'csv', delimiter: ';', start: all[1233]!.position })).items) rest.push(item);
    expect(cells(rest)).toEqual(cells(all.slice(1234)));
  });

  it('names a cut-off gzip input and what to do, without a stack trace', async () => {
    const whole = gzipSync(makeSampleCsv(600, 23));
    const input = join(dir, 'cut.csv.gz');
    await writeFile(input, whole.subarray(0, Math.floor(whole.length / 2)));
    const run = await runCli(sampleArgs(input, join(dir, 'cut.out.csv'), '--store', 'off'), sandboxEnv(sandbox));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`the input ${input} is gzip-compressed but ends in the middle of its compressed data (cut off?); fetch or compress it again`);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  // The first bytes of each (what the files' tools write), then bytes as compressed data has them:
  // read as text, such a file has NULs in its first line, as UTF-16 has.
  const start: Record<string, number[]> = {
    zip: [0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00],
    xls: [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0x00, 0x00],
    bzip2: [...Buffer.from('BZh91AY&SY'), 0x00, 0x00],
    xz: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x04],
    zstd: [0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00],
  };
  it.each([
    ['customers.csv.zip', 'zip', 'is a zip archive (an Excel .xlsx workbook is one too)'],
    ['customers.xlsx', 'zip', 'is a zip archive (an Excel .xlsx workbook is one too)'],
    ['customers.xls', 'xls', 'is an Excel 97-2003 workbook (.xls)'],
    ['customers.csv.bz2', 'bzip2', 'is bzip2-compressed'],
    ['customers.csv.xz', 'xz', 'is xz-compressed'],
    ['customers.csv.zst', 'zstd', 'is zstd-compressed'],
    ['customers.csv.gz', 'bzip2', 'is bzip2-compressed'], // named .gz, but compressed with another tool
    ['customers.csv.gz', 'gzip of zip', 'is gzip-compressed, and what it holds is a zip archive'],
  ])(
    'refuses %s (%s) with exit 2 saying what it is, not that it looks like UTF-16',
    async (name, kind, said) => {
      const body = Buffer.concat([Buffer.from(start[kind.replace('gzip of ', '')]!), Buffer.from('\x00\x01,;\n\x7f\x00\n', 'latin1')]);
      const folder = join(dir, `container-${name}-${kind}`.replace(/\W+/g, '-'));
      await mkdir(folder);
      const input = join(folder, name);
      await writeFile(input, kind.startsWith('gzip of') ? gzipSync(body) : body);
      const run = await runCli(sampleArgs(input, join(folder, 'out.csv'), '--store', 'off'), sandboxEnv(sandbox));
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`the input ${input} ${said}`);
      expect(run.stderr).toContain('not CSV, JSON or NDJSON text');
      expect(run.stderr).not.toContain('UTF-16');
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(await readdir(folder)).toEqual([name]);
    },
    30_000,
  );

  it('refuses an --output named .gz: the output is plain text', async () => {
    const run = await runCli(sampleArgs(join(dir, 'customers.csv'), join(dir, 'out.csv.gz')), sandboxEnv(sandbox));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('names a gzip file, but dq-csv writes plain text');
  }, 30_000);
});
