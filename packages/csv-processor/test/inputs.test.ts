import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';

import { openSource, type SourceItem } from '../src/source/index.js';
import { describe, expect, it } from 'vitest';
import { checkpointRecords, readCsv, runCli, summaryOf, unlimited, useSandbox, useTempDir } from './helpers.js';
import { validateArgs } from '@dq/test-support/csv';

const dir = useTempDir();
const sandbox = useSandbox(unlimited());

const env = () => sandbox.env();

/** Writes `content` as `name` in a folder of its own; returns the folder and the file. */
async function inputFile(name: string, content: string | Buffer): Promise<{ folder: string; input: string }> {
  const folder = join(dir, name.replace(/\W+/g, '-'));
  await mkdir(folder);
  const input = join(folder, name);
  await writeFile(input, content);
  return { folder, input };
}

const element = (i: number) => ({ id: i, street: `Hauptstraße ${i}`, postalCode: '10115', locality: 'Berlin' });
const JSON_ARGS = ['--country', 'DE', '--map', 'addressLine=street,postalCode=postalCode,locality=locality', '--batch-size', '100'];

/** The objects of a JSON array output that a stopped run left unclosed (one element per line). */
async function unclosedArray(path: string): Promise<Record<string, unknown>[]> {
  const lines = (await readFile(path, 'utf8')).split('\n').slice(1).filter(Boolean);
  return lines.map((l) => JSON.parse(l.replace(/,$/, '')) as Record<string, unknown>);
}

describe('a JSON input that is not valid', () => {
  it('refuses a file that is not an array with exit 2 naming the byte offset, leaving no file behind', async () => {
    const { folder, input } = await inputFile('object.json', '\n  {"id": 1, "street": "Hauptstraße 5"}\n');
    const run = await runCli(['validate', '--input', input, '--output', join(folder, 'out.json'), ...JSON_ARGS], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('is not a JSON array: at byte offset 3 (line 2)');
    expect(run.stderr).toContain('--format ndjson');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(await readdir(folder)).toEqual(['object.json']);
  });

  it('refuses a syntax error in the first element with exit 2 and leaves no file behind', async () => {
    const { folder, input } = await inputFile('first.json', '[\n  {id: 1}\n]\n');
    const run = await runCli(['validate', '--input', input, '--output', join(folder, 'out.json'), ...JSON_ARGS], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('is not valid JSON at byte offset 5, line 2: expected an object key; no element before it was read');
    expect(await readdir(folder)).toEqual(['first.json']);
  });

  it('writes and checkpoints the elements before a syntax error, then exits 2 naming its offset and line', async () => {
    const good = Array.from({ length: 250 }, (_, i) => JSON.stringify(element(i + 1)));
    const after = Array.from({ length: 50 }, (_, i) => JSON.stringify(element(i + 252)));
    const text = `[\n${good.join(',\n')},\n{"id": 251, "street": 'Lindenweg'},\n${after.join(',\n')}\n]\n`;
    const { folder, input } = await inputFile('syntax.json', text);
    const output = join(folder, 'out.json');
    const run = await runCli(['validate', '--input', input, '--output', output, ...JSON_ARGS], env());
    expect(run.code, run.stderr).toBe(2);
    const offset = text.indexOf("'Lindenweg'");
    expect(run.stderr).toContain(`is not valid JSON at byte offset ${Buffer.byteLength(text.slice(0, offset))}, line 252: expected a value`);
    expect(run.stderr).toContain('the 250 elements before it are written to the output');
    expect((await unclosedArray(output)).map((o) => o['id'])).toEqual(good.map((_, i) => i + 1));
    const checkpoint = JSON.parse(await readFile(`${output}.checkpoint.json`, 'utf8')) as { position: { records: number } };
    expect(checkpoint.position.records).toBe(250);
  });

  it('tells a wrong byte near the end from a truncated file', async () => {
    const { folder, input } = await inputFile('near-end.json', `[${JSON.stringify(element(1))},{"id": 'x'}]`);
    const run = await runCli(['validate', '--input', input, '--output', join(folder, 'out.json'), ...JSON_ARGS], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/is not valid JSON at its end \(byte offset \d+\): expected a value; the 1 element before it is written/);
  });

  it('writes the elements of a truncated array, then exits 2 saying the file is truncated', async () => {
    const good = Array.from({ length: 120 }, (_, i) => JSON.stringify(element(i + 1)));
    const text = `[${good.join(',')},{"id": 121, "stre`;
    const { folder, input } = await inputFile('truncated.json', text);
    const output = join(folder, 'out.json');
    const run = await runCli(['validate', '--input', input, '--output', output, ...JSON_ARGS], env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`at its end (byte offset ${Buffer.byteLength(text)}): the array is not closed: the file is truncated`);
    expect((await unclosedArray(output)).map((o) => o['id'])).toEqual(good.map((_, i) => i + 1));
  });
});

describe('a record over the size limit', () => {
  const big = 'x'.repeat(5 * 1024 * 1024);

  it('goes to the rejects with its line and reason while the run goes on (CSV, quoted or not)', async () => {
    const text = `id;strasse;plz;ort\n1;Hauptstraße 5;10115;Berlin\n2;${big};10115;Berlin\n3;"${big}";10115;Berlin\n4;Lindenweg 2;01067;Dresden\n5;short\n6;Goethestraße 1;60313;Frankfurt\n`;
    const { folder, input } = await inputFile('big.csv', text);
    const output = join(folder, 'out.csv');
    const run = await runCli(validateArgs(input, output, 'addressLine=strasse,postalCode=plz,locality=ort', '--max-failed', '0.5'), env());
    expect(run.code, run.stderr).toBe(0);
    expect((await readCsv(output, { delimiter: ';' })).rows.map((r) => r[0])).toEqual(['1', '4', '6']);
    const rejects = await readCsv(join(folder, 'out.rejects.csv'));
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([
      ['3', 'record-too-large'],
      ['4', 'record-too-large'],
      ['6', 'column-count'],
    ]);
    expect(rejects.rows[0]?.[2]).toContain(
      `the record at byte offset ${Buffer.byteLength('id;strasse;plz;ort\n1;Hauptstraße 5;10115;Berlin\n')} is ${big.length + 2 + 13} bytes long, over the limit`,
    );
    expect(rejects.rows[0]?.[3]?.startsWith('2;xxx')).toBe(true);
  });

  it('goes to the rejects with its line in NDJSON too', async () => {
    const text = `${JSON.stringify(element(1))}\n${JSON.stringify({ ...element(2), note: big })}\n${JSON.stringify(element(3))}\n`;
    const { folder, input } = await inputFile('big.ndjson', text);
    const output = join(folder, 'out.ndjson');
    const run = await runCli(['validate', '--input', input, '--output', output, ...JSON_ARGS, '--max-failed', '0.5'], env());
    expect(run.code, run.stderr).toBe(0);
    const lines = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((o) => o['id'])).toEqual([1, 3]);
    const rejects = await readCsv(join(folder, 'out.rejects.csv'));
    expect(rejects.rows.map((r) => [r[0], r[1]])).toEqual([['2', 'record-too-large']]);
  });
});

describe('a Windows-1252 input', () => {
  it.each(['csv', 'ndjson'] as const)('(%s) gives € „quotes“ – and Š for bytes 0x80-0x9F, not C1 control characters', async (format) => {
    // 0x80 €, 0x84 „, 0x93 “, 0x96 –, 0x8A Š; 0xDF ß (as in Latin-1); 0x81 is unassigned and stays U+0081.
    const note = Buffer.from([0x80, 0x20, 0x84, 0x61, 0x93, 0x20, 0x96, 0x20, 0x8a, 0xdf, 0x81]);
    const bytes =
      format === 'csv'
        ? Buffer.concat([Buffer.from('id;strasse;plz;ort;note\n1;Hauptstra'), Buffer.from([0xdf]), Buffer.from('e 5;10115;Berlin;'), note, Buffer.from('\n')])
        : Buffer.concat([
            Buffer.from('{"id":1,"strasse":"Hauptstra'),
            Buffer.from([0xdf]),
            Buffer.from('e 5","plz":"10115","ort":"Berlin","note":"'),
            note,
            Buffer.from('"}\n'),
          ]);
    const { folder, input } = await inputFile(`cp1252.${format}`, bytes);
    const output = join(folder, `out.${format}`);
    const args = [
      'validate',
      '--input',
      input,
      '--output',
      output,
      '--encoding',
      'windows-1252',
      '--country',
      'DE',
      '--map',
      'addressLine=strasse,postalCode=plz,locality=ort',
    ];
    const run = await runCli(format === 'csv' ? [...args, '--delimiter', ';'] : args, env());
    expect(run.code, run.stderr).toBe(0);
    const written =
      format === 'csv' ? (await readCsv(output, { delimiter: ';' })).rows[0]?.[4] : (JSON.parse(await readFile(output, 'utf8')) as { note: string }).note;
    expect(written).toBe('€ „a“ – Šß\u0081');
  });
});

/** A run over a `;` file of strasse, plz and ort read in `encoding`, without a result store. */
const args = (input: string, output: string, encoding: string) => [
  'validate',
  '--input',
  input,
  '--output',
  output,
  '--encoding',
  encoding,
  '--delimiter',
  ';',
  '--country',
  'DE',
  '--map',
  'addressLine=strasse,postalCode=plz,locality=ort',
  '--store',
  'off',
];

describe('a UTF-8 input read with --encoding latin1 or windows-1252', () => {
  const utf8 = 'id;strasse;plz;ort\n1;Hauptstraße 5;10115;Berlin\n2;Schillerstraße 3;80336;München\n';
  const billed = () => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);

  it.each([
    ['latin1', 'plain', Buffer.from(utf8), 'line 2 holds "Hauptstraße", which read as latin1 would be "HauptstraÃ\\u009fe"'],
    ['windows-1252', 'plain', Buffer.from(utf8), 'line 2 holds "Hauptstraße", which read as windows-1252 would be "HauptstraÃŸe"'],
    ['windows-1252', 'with a byte order mark', Buffer.from('\uFEFFid;strasse;plz;ort\n1;Hauptstrasse 5;10115;Berlin\n'), 'starts with a UTF-8 byte order mark'],
    ['latin1', 'gzip-compressed', gzipSync(Buffer.from(utf8)), 'line 2 holds "Hauptstraße"'],
  ])('(%s, %s) is refused with exit 2 before anything is paid for or written: its ü would be sent and written as Ã¼', async (encoding, name, bytes, said) => {
    const { folder, input } = await inputFile(`utf8-as-${encoding}-${name}.csv${name === 'gzip-compressed' ? '.gz' : ''}`, bytes);
    const before = billed();
    const run = await runCli(args(input, join(folder, 'out.csv'), encoding), env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(said);
    expect(run.stderr).toContain('leave out --encoding');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(billed()).toBe(before);
    expect(await readdir(folder)).toEqual([basename(input)]);
  });

  it('still reads a Latin-1 file whose only bytes beyond ASCII happen to be valid UTF-8 of another script (ß before a no-break space)', async () => {
    // DF A0 is valid UTF-8 (U+07E0, an NKo letter), but no Western text: the file is taken as Latin-1.
    const bytes = Buffer.from('id;strasse;plz;ort\n1;Hauptstraße\u00a05;10115;Berlin\n', 'latin1');
    const { folder, input } = await inputFile('latin1-nbsp.csv', bytes);
    const output = join(folder, 'out.csv');
    const run = await runCli(args(input, output, 'latin1'), env());
    expect(run.code, run.stderr).toBe(0);
    expect((await readCsv(output, { delimiter: ';' })).rows[0]?.[1]).toBe('Hauptstraße\u00a05');
  });
});

describe('an input read with --encoding latin1 or windows-1252 that is plain ASCII for its first 64 KiB', () => {
  const billed = () => Object.values(sandbox.stats().billable).reduce((a, b) => a + b, 0);
  // 60 rows of plain ASCII (122 KiB; notes that gzip cannot shrink much, so that its first 64 KiB
  // hold less than them), then the first letters beyond ASCII on line 62.
  const PLAIN = 60;
  const padding = 'x'.repeat(100);
  const plain = Array.from({ length: PLAIN }, (_, i) => `${i + 1};Hauptstrasse ${i + 1};10115;Berlin;${randomBytes(1536).toString('base64')}`);
  const later = [
    ['321', 'Schillerstraße 3', '80336', 'München'],
    ['322', 'Königsallee 1', '40212', 'Düsseldorf'],
    ['323', 'Lindenweg 2', '10115', 'Berlin'],
  ];
  const text = (rows: string[][]) => ['id;strasse;plz;ort;note', ...plain, ...rows.map((r) => [...r, padding].join(';'))].join('\n') + '\n';

  it.each([
    ['latin1', 'csv', (s: string) => Buffer.from(s), 'line 62 holds "Schillerstraße", which read as latin1 would be "SchillerstraÃ\\u009fe"'],
    [
      'windows-1252',
      'csv.gz',
      (s: string) => gzipSync(Buffer.from(s)),
      'line 62 holds "Schillerstraße", which read as windows-1252 would be "SchillerstraÃŸe"',
    ],
  ])(
    '(%s, .%s) whose first letters beyond ASCII are UTF-8 stops before paying for their record (exit 2), and the rerun it advises ends the file without paying twice',
    async (encoding, ext, bytes, said) => {
      const { folder, input } = await inputFile(`utf8-later-${encoding}.${ext}`, bytes(text(later)));
      expect((await stat(input)).size).toBeGreaterThan(70 * 1024);
      const output = join(folder, 'out.csv');
      const before = billed();
      const run = await runCli(args(input, output, encoding), env());
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(said);
      expect(run.stderr).toContain(`input records 1-${PLAIN} are written and checkpointed`);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      // The plain rows are written and paid for once; the UTF-8 record was never sent.
      expect(billed() - before).toBe(PLAIN);
      const stopped = await readCsv(output, { delimiter: ';' });
      expect(stopped.rows.map((r) => r[0])).toEqual(plain.map((_, i) => String(i + 1)));

      // The advice, run as it is written: the command with its --encoding replaced.
      const advice = /rerun with (--encoding utf8 --resume) in place of (--encoding \S+) \(the other options as they are\)/.exec(run.stderr);
      expect(advice, run.stderr).not.toBeNull();
      const again = args(input, output, encoding).join('\0').replace(advice![2]!.replace(' ', '\0'), advice![1]!.replaceAll(' ', '\0')).split('\0');
      const resumed = await runCli(again, env());
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(summaryOf(resumed).resumed).toBe(true);
      expect(billed() - before).toBe(PLAIN + later.length);
      const out = await readCsv(output, { delimiter: ';' });
      expect(out.rows.map((r) => r.slice(0, 4))).toEqual([...plain.map((l) => l.split(';').slice(0, 4)), ...later]);
      expect(await readFile(output, 'utf8')).not.toContain('Ã');
    },
  );

  it('(latin1, NDJSON) stops as CSV does: the plain records are handed out, then the read ends naming the UTF-8 line', async () => {
    const lines = [...plain.map((l) => JSON.stringify({ line: l })), JSON.stringify({ street: 'Schillerstraße 3', locality: 'München' })];
    const { input } = await inputFile('utf8-later.ndjson', lines.join('\n') + '\n');
    const read: SourceItem[] = [];
    const reading = (async () => {
      for await (const item of (await openSource({ path: input, format: 'ndjson', encoding: 'latin1' })).items) read.push(item);
    })();
    await expect(reading).rejects.toThrow(`line ${PLAIN + 1} holds "Schillerstraße", which read as latin1 would be`);
    expect(read.map((i) => (i.kind === 'row' ? i.object?.line : i))).toEqual(plain);
  });

  it('(latin1) that is really Latin-1 is read as told past 64 KiB: its letters come out as they are', async () => {
    const { folder, input } = await inputFile('latin-later.csv', Buffer.from(text(later), 'latin1'));
    const output = join(folder, 'out.csv');
    const run = await runCli(args(input, output, 'latin1'), env());
    expect(run.code, run.stderr).toBe(0);
    expect((await readCsv(output, { delimiter: ';' })).rows.slice(PLAIN).map((r) => r.slice(0, 4))).toEqual(later);
  });

  it('refuses a resume with another --encoding when the input is not plain ASCII up to the checkpoint', async () => {
    const latin = 'id;strasse;plz;ort\n1;Schillerstraße 3;80336;München\n2;Lindenweg 2;10115;Berlin\n3;Am Markt 1;10115;Berlin\n';
    const { folder, input } = await inputFile('latin-resume.csv', Buffer.from(latin, 'latin1'));
    const output = join(folder, 'out.csv');
    const capped = await runCli([...args(input, output, 'latin1'), '--max-calls', '2', '--batch-size', '1'], env());
    expect(capped.code, capped.stderr).toBe(5);
    expect(await checkpointRecords(output)).toBeGreaterThan(0);
    const resumed = await runCli([...args(input, output, 'utf8'), '--resume'], env());
    expect(resumed.code, resumed.stderr).toBe(2);
    expect(resumed.stderr).toContain('cannot resume: --encoding is not as in the interrupted run');
    expect((await readCsv(output, { delimiter: ';' })).rows[0]?.slice(1, 4)).toEqual(['Schillerstraße 3', '80336', 'München']);
  });
});

describe('a CSV file whose lines end in a carriage return alone (classic Mac OS)', () => {
  it.each([
    ['small', 3],
    ['over the record limit', 40_000],
  ])('(%s) is refused with exit 2 saying so, not as a header too long for the --delimiter', async (name, rows) => {
    const lines = ['strasse;plz;ort', ...Array.from({ length: rows }, (_, i) => `Hauptstraße ${i};10115;Berlin`)];
    const { folder, input } = await inputFile(`cr-${name}.csv`, lines.join('\r') + '\r');
    const run = await runCli(args(input, join(folder, 'out.csv'), 'utf8'), env());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain("the file's lines end in a CR alone");
    expect(run.stderr).toContain('LF or CRLF');
    expect(run.stderr).not.toContain('--delimiter?');
    expect(await readdir(folder)).toEqual([basename(input)]);
  });
});

describe('a UTF-16 input', () => {
  const rows = [
    ['1', 'Hauptstraße 5', '10115', 'Berlin'],
    ['2', 'Königsallee "Kö" 1', '40212', 'Düsseldorf'],
    ['3', 'Rue de l’Église 𝄞', '01067', 'Dresden'],
  ];
  const text = 'id;strasse;plz;ort\r\n' + rows.map((r) => r.map((c) => (c.includes('"') ? `"${c.replaceAll('"', '""')}"` : c)).join(';')).join('\r\n') + '\r\n';
  const utf16be = (s: string) => Buffer.from(s, 'utf16le').swap16();

  it.each([
    ['LE', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])],
    ['BE', Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be(text)])],
  ])('with a %s byte order mark is read as UTF-16: the output holds its values character for character', async (name, bytes) => {
    const { folder, input } = await inputFile(`utf16${name}.csv`, bytes);
    const output = join(folder, 'out.csv');
    const run = await runCli(
      ['validate', '--input', input, '--output', output, '--delimiter', ';', '--country', 'DE', '--map', 'addressLine=strasse,postalCode=plz,locality=ort'],
      env(),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run).rows).toBe(3);
    const out = await readCsv(output, { delimiter: ';' });
    expect(out.header.slice(0, 4)).toEqual(['id', 'strasse', 'plz', 'ort']);
    expect(out.rows.map((r) => r.slice(0, 4))).toEqual(rows);
  });

  it('continues from a checkpointed position with the same records as an uninterrupted read', async () => {
    const many = 'id;strasse;plz;ort\n' + Array.from({ length: 2000 }, (_, i) => `${i};Straße ${i} 𝄞;10115;Berlin`).join('\n') + '\n';
    const { input } = await inputFile('resume16.csv', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(many, 'utf16le')]));
    const all: SourceItem[] = [];
    for await (const item of (await openSource({ path: input, format: 'csv', delimiter: ';' })).items) all.push(item);
    expect(all).toHaveLength(2000);
    const from = all[1233]!.position;
    const rest: SourceItem[] = [];
    for await (const item of (await openSource({ path: input, format: 'csv', delimiter: ';', start: from })).items) rest.push(item);
    expect(rest.map((i) => (i.kind === 'row' ? i.cells : i))).toEqual(all.slice(1234).map((i) => (i.kind === 'row' ? i.cells : i)));
  });

  it('without a byte order mark is refused with advice to save it as UTF-8, not to try Latin-1', async () => {
    const { folder, input } = await inputFile('nobom.csv', Buffer.from(text, 'utf16le'));
    const run = await runCli(
      [
        'validate',
        '--input',
        input,
        '--output',
        join(folder, 'out.csv'),
        '--delimiter',
        ';',
        '--country',
        'DE',
        '--map',
        'addressLine=strasse,postalCode=plz,locality=ort',
      ],
      env(),
    );
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('UTF-16 without a byte order mark');
    expect(run.stderr).not.toContain('latin1');
    expect(await stat(join(folder, 'out.csv')).catch(() => undefined)).toBeUndefined();
  });
});
