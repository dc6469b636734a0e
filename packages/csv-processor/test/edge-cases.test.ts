import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_API_KEY, startSandbox, type Sandbox } from '@dq/sandbox';
import { processFile } from '../src/run.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsv, tempDir } from './helpers.js';

let sandbox: Sandbox;
let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  ({ dir, cleanup } = await tempDir());
});
afterAll(async () => {
  await sandbox.close();
  await cleanup();
});

async function clean(name: string, content: Buffer | string, extra: Partial<Parameters<typeof processFile>[0]> = {}) {
  const input = join(dir, `${name}.csv`);
  await writeFile(input, content);
  const summary = await processFile({
    input,
    output: join(dir, `${name}.out.csv`),
    delimiter: ';',
    country: 'DE',
    map: { street: 'strasse', houseNumber: 'nr', postalCode: 'plz', locality: 'ort' },
    baseUrl: sandbox.url,
    apiKey: DEFAULT_API_KEY,
    ...extra,
  });
  const output = await readCsv(summary.paths.output, { delimiter: extra.delimiter ?? ';' });
  const rejects = await readCsv(summary.paths.rejects);
  return { summary, output, rejects };
}

const HEADER = 'id;strasse;nr;plz;ort\r\n';

describe('the edge-case corpus', () => {
  it('keeps every row in order through quoted newlines, embedded quotes, BOM, CRLF and empty lines', async () => {
    const text =
      '\uFEFF' +
      HEADER +
      '1;Hauptstraße;5;10115;Berlin\r\n' +
      '\r\n' +
      '2;"Unter den\nLinden";77;10117;Berlin\r\n' +
      '3;"Königsallee ""Kö""";1;40212;Düsseldorf\r\n' +
      '4;"Am Markt; Nord";2;04109;Leipzig\r\n' +
      '\r\n\r\n' +
      '5;Goethestraße;12;60313;Frankfurt am Main';
    const { summary, output, rejects } = await clean('quoting', text);
    expect(output.header.slice(0, 5)).toEqual(['id', 'strasse', 'nr', 'plz', 'ort']);
    expect(output.rows.map((r) => r[0])).toEqual(['1', '2', '3', '4', '5']);
    expect(output.rows[1]?.[1]).toBe('Unter den\nLinden');
    expect(output.rows[2]?.[1]).toBe('Königsallee "Kö"');
    expect(output.rows[3]?.[1]).toBe('Am Markt; Nord');
    expect(rejects.rows).toEqual([]);
    expect(summary.totals.rows).toBe(5);
    expect(summary.exitCode).toBe(0);
    const statuses = output.rows.map((r) => r[output.header.indexOf('dq_status')]);
    for (const status of statuses) expect(['accepted', 'review', 'invalid', 'invalid-input']).toContain(status);
  });

  it('a first column name that starts with a byte order mark (an input with two) keeps it in the output', async () => {
    const { output } = await clean('two-boms', '\uFEFF\uFEFF' + HEADER + '1;Hauptstraße;5;10115;Berlin\r\n');
    // Read back by the same reader, which drops one byte order mark at the start of a file.
    expect(output.header.slice(0, 2)).toEqual(['\uFEFFid', 'strasse']);
    expect((await readFile(join(dir, 'two-boms.out.csv'), 'utf8')).startsWith('"\uFEFFid";strasse;')).toBe(true);
    expect(output.rows[0]?.[0]).toBe('1');
  });

  it('sends short, long and broken rows to the rejects file with their line and reason', async () => {
    const text =
      HEADER +
      '1;Hauptstraße;5;10115;Berlin\n' +
      '2;Hauptstraße;5\n' +
      '3;Hauptstraße;5;10115;Berlin;extra\n' +
      '4;"Haupt"straße;5;10115;Berlin\n' +
      '5;Schillerstraße;3;80336;München\n';
    const { summary, output, rejects } = await clean('broken', text, { maxFailed: 1 });
    expect(output.rows.map((r) => r[0])).toEqual(['1', '5']);
    expect(rejects.header).toEqual(['line', 'code', 'reason', 'raw']);
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([
      ['3', 'column-count'],
      ['4', 'column-count'],
      ['5', 'broken-quoting'],
    ]);
    expect(rejects.rows[0]?.[2]).toContain('expected 5 fields');
    expect(rejects.rows[0]?.[3]).toBe('2;Hauptstraße;5');
    // input rows = output rows + rejected rows
    expect(summary.totals.rows + summary.totals.rejects).toBe(5);
    expect(summary.totals.rejects).toBe(3);
  });

  it('reads a Latin-1 file when told, and rejects its umlauts as undecodable when not', async () => {
    const latin1 = Buffer.from(HEADER + '1;Schloßstraße;2;70176;Stuttgart\n2;Königstraße;1;70173;Stuttgart\n', 'latin1');
    const asLatin1 = await clean('latin1', latin1, { encoding: 'latin1' });
    expect(asLatin1.output.rows.map((r) => r[1])).toEqual(['Schloßstraße', 'Königstraße']);
    expect(asLatin1.rejects.rows).toEqual([]);

    const asUtf8 = await clean('latin1-as-utf8', latin1, { maxFailed: 1 });
    expect(asUtf8.output.rows).toEqual([]);
    expect(asUtf8.rejects.rows.map((r) => [r[0], r[1]])).toEqual([
      ['2', 'undecodable-bytes'],
      ['3', 'undecodable-bytes'],
    ]);
    expect(asUtf8.rejects.rows[0]?.[2]).toContain('--encoding latin1');
    expect(asUtf8.summary.exitCode).toBe(0);
  });

  it('gives up on a never-closed quote one line at a time, keeping the rows after it', async () => {
    const text = HEADER + '1;"Hauptstraße;5;10115;Berlin\n2;Schillerstraße;3;80336;München\n3;Lindenweg;4;01067;Dresden\n';
    const { output, rejects } = await clean('unclosed', text, { maxFailed: 1 });
    expect(output.rows.map((r) => r[0])).toEqual(['2', '3']);
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([['2', 'broken-quoting']]);
  });

  it('rejects a record whose quoted field holds a line break whole when it has a field too many, and reads no row from its second line', async () => {
    // Line 3's record spans lines 3-4 and has 6 fields. Read line by line, its second line is a row
    // of the header's width (id `weg"`, street `2`…): a record the file does not hold, paid for and
    // written to the output. A stray quote (line 5: its line alone has 5 fields) still costs only its line.
    const text =
      HEADER +
      '1;"Haupt\nstraße";5;10115;Berlin\n' +
      '2;"Linden\nweg";2;10117;Berlin;extra\n' +
      '3;Schillerstraße;3;80336;"München\n' +
      '4;Monitor 24";4;01067;Dresden\n' +
      '5;Lindenweg;4;01067;Dresden\n';
    const { summary, output, rejects } = await clean('wide-multiline', text, { maxFailed: 2 });
    expect(output.rows.map((r) => r[0])).toEqual(['1', '4', '5']);
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([
      ['4', 'column-count'],
      ['6', 'broken-quoting'],
    ]);
    expect(rejects.rows[0]?.[2]).toBe('expected 5 fields as in the header, found 6 (lines 4-5)');
    expect(rejects.rows[0]?.[3]).toBe('2;"Linden\nweg";2;10117;Berlin;extra');
    expect(summary.totals.rows + summary.totals.rejects).toBe(5);
  });

  it('neutralises cells a spreadsheet would run as formulas when asked to', async () => {
    const text = HEADER + '=1+2;Hauptstraße;5;10115;Berlin\n';
    const { summary } = await clean('formula', text, { spreadsheetSafe: true });
    const raw = await readFile(summary.paths.output, 'utf8');
    expect(raw.split('\n')[1]?.startsWith("'=1+2;")).toBe(true);
  });

  it('exits 4 when rejected rows pass --max-failed', async () => {
    const text = HEADER + '1;Hauptstraße;5;10115;Berlin\n2;x\n';
    const { summary } = await clean('max-failed', text, { maxFailed: 0.2 });
    expect(summary.failedShare).toBe(0.5);
    expect(summary.exitCode).toBe(4);
  });
});
