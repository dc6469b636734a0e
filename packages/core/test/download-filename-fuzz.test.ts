import { basename, dirname, join, resolve, sep, win32 } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseContentDisposition, safeFileName } from '../src/download/index.js';
import { seededRandom, type Rand } from '@dq/test-support/random';

/*
 * Property-based tests of the file name a download is placed under: random `Content-Disposition`
 * values (filename and RFC 8187 filename* in UTF-8 and ISO-8859-1, well-formed and broken, in any
 * order, case and spacing, repeated, among other parameters) carrying names made of path parts,
 * controls, bidirectional and zero-width characters, combining marks, emoji, Windows device names
 * and names far past the length limit go through parseContentDisposition and safeFileName, and
 * whatever comes out must be one safe, stable path component, reported as changed whenever it is
 * not what the server sent. Well-formed headers are also compared with a small reference decoder.
 * Every case is derived from a seed: a failure names it, and `headerCase(seed)` replays it
 * (DQ_FUZZ_SCALE=n runs n times as many seeds).
 */

const SCALE = Math.max(1, Number(process.env.DQ_FUZZ_SCALE ?? 1) || 1);
const SEED0 = 0x5eed_0d15;

/** The limit the project documents for a placed file name, in UTF-8 bytes. */
const MAX_NAME_BYTES = 200;

// ---------------------------------------------------------------------------------------------
// Seeded randomness (mulberry32, the generator the sandbox uses): a failing case replays from its seed.

const rand = seededRandom;

/** Runs `check` for `count` seeds; a failure names its seed so it can be replayed alone. */
function forSeeds(count: number, check: (seed: number) => void): void {
  for (let i = 0; i < count * SCALE; i++) {
    const seed = (SEED0 + i * 0x9e3779b1) >>> 0;
    try {
      check(seed);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      err.message = `seed ${seed} (0x${seed.toString(16)}): ${err.message}`;
      throw err;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// What a safe name is, written out here independently of the code under test

const BIDI = ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069', '\u200E', '\u200F', '\u061C'];
const ZERO_WIDTH = ['\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF'];
const OTHER_FORMAT = ['\u00AD', '\u2028', '\u2029', '\u180E', '\u2061', '\u{E0041}'];
const CONTROLS = [...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)), '\u007F'];
const C1 = Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(0x80 + i));
const WINDOWS_FORBIDDEN = ['<', '>', ':', '"', '|', '?', '*'];
const INVISIBLE = new Set([...BIDI, ...ZERO_WIDTH, ...OTHER_FORMAT]);
const UNSAFE_CLASS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** Device names Windows opens instead of a file, with any extension ("nul.txt", "COM1.tar.gz"). */
const RESERVED = /^(?:CON|PRN|AUX|NUL|COM[0-9\u00B9\u00B2\u00B3]|LPT[0-9\u00B9\u00B2\u00B3]|CONIN\$|CONOUT\$)$/i;
const isReservedOnWindows = (name: string): boolean => RESERVED.test((name.split('.')[0] ?? '').replace(/ +$/, ''));

function loneSurrogateAt(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
      else return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

const DEST = resolve('/srv/refdata/software/software-bundle/linux_x64');

/**
 * What is wrong with `name`, placed for the server's `raw` and reported as `changed`, by the
 * rules every name placed in a target folder must keep: none, or one line per broken rule.
 */
function problemsOf(name: string, raw: string | undefined, fallback: string, changed: boolean): string[] {
  const problems: string[] = [];
  const must = (ok: boolean, rule: string): void => void (ok || problems.push(rule));
  must(name.length > 0, 'not empty');
  // one path component, on POSIX and on Windows, that stays in the folder
  must(!/[/\\\0]/.test(name), 'no /, \\ or NUL');
  must(basename(name) === name && win32.basename(name) === name, 'its own basename');
  must(name !== '.' && name !== '..' && !name.includes('..'), 'not . or .., no ..');
  must(!name.startsWith('.'), 'not hidden (leading dot)');
  const placed = join(DEST, name);
  must(dirname(placed) === DEST && placed.startsWith(DEST + sep), 'joined to the folder, stays in it');
  // length and encoding
  must(Buffer.byteLength(name) <= MAX_NAME_BYTES, `at most ${MAX_NAME_BYTES} UTF-8 bytes (has ${Buffer.byteLength(name)})`);
  must(loneSurrogateAt(name) === -1, `no lone surrogate (one at ${loneSurrogateAt(name)})`);
  must(Buffer.from(name, 'utf8').toString('utf8') === name, 'survives UTF-8');
  // no character that hides, reorders or is refused
  const refused = [...name]
    .filter((ch) => INVISIBLE.has(ch) || UNSAFE_CLASS.test(ch) || WINDOWS_FORBIDDEN.includes(ch))
    .map((ch) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
  must(refused.length === 0, `no control, format or forbidden character (has ${refused.join(' ')})`);
  must(!/[.\s]$/u.test(name), 'no trailing space or dot');
  must(!isReservedOnWindows(name), 'no Windows device name');
  // stable: a placed name is kept as it is
  const again = safeFileName(name, fallback);
  must(again.name === name && !again.changed, `stable (sanitised again: ${JSON.stringify(again)})`);
  // reported: anything else than the server's name counts as changed, the server's name does not
  must(changed === (raw === undefined || name !== raw), `changed is ${changed}`);
  return problems;
}

function expectSafeName(name: string, raw: string | undefined, fallback: string, changed: boolean, context = ''): void {
  const problems = problemsOf(name, raw, fallback, changed);
  if (problems.length > 0) expect(problems, `${context}${JSON.stringify(raw)} placed as ${JSON.stringify(name)}`).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// Random names

const WORDS = [
  'software-bundle',
  'setupRefdata_linux_x64',
  'DE_001',
  'report',
  'a',
  'x',
  'Größe',
  'naïve',
  '€ rates',
  '中文',
  'Ωmega',
  'release notes',
  '1.2.3',
];
const EXTS = ['.zip', '.txt', '.exe', '.sh', '.tar.gz', '.sha512', '.jpg', '', '.'];
const DEVICES = ['con', 'CON', 'Con', 'prn', 'AUX', 'nul', 'NUL', 'com1', 'COM9', 'COM0', 'lpt1', 'LPT9', 'COM\u00B9', 'lpt\u00B3', 'CONIN$', 'conout$'];
const COMBINING = ['\u0301', '\u0308', '\u0338', '\u0323\u0302', '\u20DD', '\u034F'];
const EMOJI = ['\u{1F600}', '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}', '\u2764\uFE0F', '\u{1F1E9}\u{1F1EA}', '\u{1F44D}\u{1F3FD}', '\u{10348}'];
const SPACES = [' ', '  ', '\u00A0', '\u3000', '\u2003', '\t'];
const PATHY = ['..', '.', '/', '\\', '../', '..\\', '/etc/', 'C:\\Windows\\', '\\\\server\\share\\', '%2F', '%00', '%2e%2e'];
const LONE = ['\uD800', '\uDFFF', '\uDBFF'];

function piece(r: Rand): string {
  switch (r.int(0, 14)) {
    case 0:
      return r.pick(WORDS);
    case 1:
      return r.pick(EXTS);
    case 2:
      return r.pick(DEVICES) + (r.chance(0.5) ? r.pick(EXTS) : '');
    case 3:
      return r.pick(COMBINING);
    case 4:
      return r.pick(EMOJI);
    case 5:
      return r.pick(SPACES);
    case 6:
      return r.pick(PATHY);
    case 7:
      return r.pick(CONTROLS);
    case 8:
      return r.pick(C1);
    case 9:
      return r.pick(BIDI);
    case 10:
      return r.pick([...ZERO_WIDTH, ...OTHER_FORMAT]);
    case 11:
      return r.pick(WINDOWS_FORBIDDEN);
    case 12:
      return r.pick(['a', 'ä', '\u{1F600}', ' ', '.', 'é', 'e\u0301', '中']).repeat(r.int(20, 160));
    case 13:
      return r.pick(LONE);
    default:
      return '.'.repeat(r.int(1, 4)) + r.pick(['', ' ', '. ']);
  }
}

function randomName(r: Rand): string {
  switch (r.int(0, 9)) {
    case 0:
      return r.pick(DEVICES) + r.pick(['', ' ', '.', ' .txt', '.txt', '.tar.gz', '..zip']);
    case 1:
      return '.'.repeat(r.int(1, 5));
    case 2:
      return Array.from({ length: r.int(1, 6) }, () => r.pick([...CONTROLS, ...BIDI, ...ZERO_WIDTH, ' ', '.', ...WINDOWS_FORBIDDEN])).join('');
    case 3:
      // long names: the shortening
      return r.pick(WORDS) + r.pick(['a', 'ä', '\u{1F600}', 'e\u0301', ' ', '. ', 'x ']).repeat(r.int(60, 260)) + r.pick(['', ' ', '.']) + r.pick(EXTS);
    default:
      return Array.from({ length: r.int(1, 8) }, () => piece(r)).join('');
  }
}

// ---------------------------------------------------------------------------------------------
// Random Content-Disposition values, and what a well-formed one names

const ATTR_CHAR = /^[A-Za-z0-9!#$&+\-.^_`|~]$/;
const TOKEN_VALUE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const casing = (r: Rand, s: string): string => r.pick([s, s.toUpperCase(), [...s].map((c) => (r.chance(0.5) ? c.toUpperCase() : c)).join('')]);

const hex = (r: Rand, b: number): string => {
  const h = b.toString(16).padStart(2, '0');
  return `%${r.chance(0.3) ? h : h.toUpperCase()}`;
};

/** RFC 8187 value-chars for `bytes`: attr-chars left as they are (or percent-encoded), the rest %XX. */
function pctEncode(r: Rand, bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) {
    const c = String.fromCharCode(b);
    out += b < 0x80 && ATTR_CHAR.test(c) && r.chance(0.8) ? c : hex(r, b);
  }
  return out;
}

/** The quoted-string form of `value`, with `"` and `\` escaped (and other characters, sometimes, needlessly). */
function quoted(r: Rand, value: string): string {
  let out = '"';
  for (const ch of value) out += ch === '"' || ch === '\\' || r.chance(0.05) ? `\\${ch}` : ch;
  return `${out}"`;
}

interface Param {
  text: string;
  /** For filename: the value a reader gets; for filename*: the name it decodes to (undefined: not decodable). */
  key: 'filename' | 'filename*' | 'other';
  value: string | undefined;
  /** Whether it is written as RFC 6266/8187 say, so a reader knows exactly what it holds. */
  wellFormed: boolean;
}

function filenameParam(r: Rand, name: string): Param {
  const key = casing(r, 'filename');
  const ws = (): string => r.pick(['', '', ' ', '  ', '\t']);
  if (TOKEN_VALUE.test(name) && r.chance(0.5)) return { text: `${key}${ws()}=${ws()}${name}`, key: 'filename', value: name, wellFormed: true };
  if (r.chance(0.1)) {
    // raw, unquoted, whatever it holds: the reader may stop anywhere in it
    return { text: `${key}=${name}`, key: 'filename', value: undefined, wellFormed: false };
  }
  return { text: `${key}${ws()}=${ws()}${quoted(r, name)}`, key: 'filename', value: name, wellFormed: true };
}

/** RFC 8187 decoding, written out here: undefined for anything the RFC does not define. */
function referenceDecode(extValue: string): string | undefined {
  const m = /^([^']*)'([^']*)'(.*)$/.exec(extValue);
  if (m === null) return undefined;
  const charset = m[1]!.toLowerCase();
  const encoded = m[3]!;
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; i++) {
    const c = encoded[i]!;
    if (c === '%') {
      const h = encoded.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(h)) return undefined;
      bytes.push(parseInt(h, 16));
      i += 2;
    } else if (ATTR_CHAR.test(c)) bytes.push(c.charCodeAt(0));
    else return undefined;
  }
  if (charset === 'iso-8859-1') return String.fromCharCode(...bytes);
  if (charset !== 'utf-8') return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}

function extParam(r: Rand, name: string): Param {
  const key = casing(r, 'filename*');
  const lang = r.pick(['', '', 'en', 'de-DE', 'x-klingon']);
  const latin1 = [...name].every((c) => c.charCodeAt(0) <= 0xff && c.length === 1);
  let charset = r.pick(['UTF-8', 'utf-8', 'Utf-8', 'UTF-8', 'ISO-8859-1', 'iso-8859-1', 'koi8-r', 'utf8', 'latin1', '']);
  if (/^iso/i.test(charset) && !latin1) charset = 'UTF-8';
  let encoded = pctEncode(r, /^iso/i.test(charset) ? Uint8Array.from([...name].map((c) => c.charCodeAt(0))) : Buffer.from(name, 'utf8'));
  if (r.chance(0.25)) {
    // break it: a stray %, a bad escape, a raw byte or space, UTF-8 a decoder must refuse
    const bad = r.pick(['%', '%4', '%ZZ', '%G0', ' ', 'ä', "'", '"', '%C3', '%C0%AF', '%ED%A0%80', '%F4%90%80%80', '%FF', '%E2%82']);
    const at = r.int(0, encoded.length);
    encoded = encoded.slice(0, at) + bad + encoded.slice(at);
  }
  const ext = `${casing(r, charset)}'${lang}'${encoded}`;
  // a raw space or quote ends an unquoted value early: the parameters after it are not read
  const intact = !/[\s"]/.test(encoded);
  if (r.chance(0.05)) return { text: `${key}=${quoted(r, ext)}`, key: 'filename*', value: undefined, wellFormed: false };
  if (r.chance(0.03)) return { text: `${key}=${charset}${encoded}`, key: 'filename*', value: undefined, wellFormed: intact };
  return { text: `${key}=${ext}`, key: 'filename*', value: referenceDecode(ext), wellFormed: intact };
}

const EXTRAS: readonly Param[] = [
  { text: 'size=1048576', key: 'other', value: undefined, wellFormed: true },
  { text: 'creation-date="Wed, 12 Feb 1997 16:29:51 -0500"', key: 'other', value: undefined, wellFormed: true },
  { text: 'name="field; filename=evil.exe"', key: 'other', value: undefined, wellFormed: true },
  { text: 'x-note="a \\"quoted\\" ; part"', key: 'other', value: undefined, wellFormed: true },
  { text: 'Filename-Extra=1', key: 'other', value: undefined, wellFormed: true },
];

interface HeaderCase {
  header: string;
  /** What a reader must return as `filename` when every parameter is well-formed (else undefined: only the properties hold). */
  expected: { filename: string | undefined; from: 'filename*' | 'filename' | undefined } | undefined;
  fallback: string;
}

function headerCase(seed: number): HeaderCase {
  const r = rand(seed);
  const params: Param[] = [];
  const names = Array.from({ length: r.int(1, 3) }, () => randomName(r));
  if (r.chance(0.85)) params.push(filenameParam(r, r.pick(names)));
  if (r.chance(0.6)) params.push(extParam(r, r.pick(names)));
  if (r.chance(0.2)) params.push(r.chance(0.5) ? filenameParam(r, r.pick(names)) : extParam(r, r.pick(names)));
  for (let i = r.int(0, 2); i > 0; i--) params.push(r.pick(EXTRAS));
  const ordered = r.shuffle(params);
  const type = r.pick(['attachment', 'Attachment', 'ATTACHMENT', 'inline']);
  let header = r.pick(['', ' ', '\t']) + type;
  for (const p of ordered) header += `${r.pick(['', ' '])};${r.pick(['', ' ', ' ', '  '])}${p.text}`;
  header += r.pick(['', '', ' ', ';']);
  let expected: HeaderCase['expected'];
  if (ordered.every((p) => p.wellFormed)) {
    // first occurrence of each parameter wins; filename* when it decodes to a name, else filename
    const ext = ordered.find((p) => p.key === 'filename*');
    const plain = ordered.find((p) => p.key === 'filename');
    const fromExt = ext?.value !== undefined && ext.value !== '';
    expected = { filename: fromExt ? ext.value : plain?.value, from: fromExt ? 'filename*' : plain !== undefined ? 'filename' : undefined };
  }
  const fallback = r.chance(0.8) ? r.pick(['software-bundle.zip', 'setupRefdata_windows_x64.exe', 'user-manuals.zip']) : randomName(r);
  return { header, expected, fallback };
}

// ---------------------------------------------------------------------------------------------

describe('server file names, fuzzed', () => {
  it('the reference decoder reads what the generator encodes (a check of the test itself)', () => {
    forSeeds(500, (seed) => {
      const r = rand(seed);
      const name = randomName(r);
      const utf8 = pctEncode(r, Buffer.from(name, 'utf8'));
      // Buffer.from writes a lone surrogate as the bytes of U+FFFD
      const written = loneSurrogateAt(name) === -1 ? name : Buffer.from(name, 'utf8').toString('utf8');
      expect(referenceDecode(`UTF-8''${utf8}`)).toBe(written);
      expect(referenceDecode(`utf-8'en'${utf8}%`)).toBeUndefined();
    });
  });

  it('every Content-Disposition value gives a safe, stable, honestly reported name, and a well-formed one the name it carries', () => {
    const seen = { compared: 0, fromExt: 0, extRefused: 0, changed: 0, kept: 0, shortened: 0, device: 0, fallback: 0 };
    forSeeds(4000, (seed) => {
      const { header, expected, fallback } = headerCase(seed);
      const parsed = parseContentDisposition(header);
      const context = `header ${JSON.stringify(header)}`;
      if (parsed === undefined) expect(parsed, context).toBeDefined();
      if (expected !== undefined) {
        if (parsed?.filename !== expected.filename) expect(parsed?.filename, context).toBe(expected.filename);
        seen.compared++;
        if (expected.from === 'filename*') seen.fromExt++;
        if (expected.from === 'filename' && /filename\*/i.test(header)) seen.extRefused++;
      }
      const raw = parsed?.filename;
      const { name, changed } = safeFileName(raw, fallback);
      expectSafeName(name, raw, fallback, changed, `${context}: `);
      seen[changed ? 'changed' : 'kept']++;
      if (raw !== undefined && Buffer.byteLength(raw) > MAX_NAME_BYTES) seen.shortened++;
      if (raw !== undefined && isReservedOnWindows(raw.trim())) seen.device++;
      if (raw === undefined || raw === '') seen.fallback++;
    });
    // every kind of case comes up often enough for the properties to be tested on it
    const n = 4000 * SCALE;
    expect(seen.compared, JSON.stringify(seen)).toBeGreaterThan(n / 2);
    for (const count of [seen.fromExt, seen.extRefused, seen.changed, seen.kept, seen.shortened, seen.device, seen.fallback]) {
      expect(count, JSON.stringify(seen)).toBeGreaterThan(n / 100);
    }
  });

  it('any string, the fallback included, gives a safe, stable, honestly reported name', () => {
    forSeeds(4000, (seed) => {
      const r = rand(seed);
      const raw = r.chance(0.05) ? undefined : randomName(r);
      const fallback = r.chance(0.5) ? randomName(r) : 'software-bundle.zip';
      const { name, changed } = safeFileName(raw, fallback);
      expectSafeName(name, raw, fallback, changed);
    });
  });

  it('a name that is already safe is kept as it is and not reported', () => {
    const alphabet = ['a', 'Z', '7', '-', '_', '(', ')', 'ä', 'é', 'ß', '中', 'Ω', '\u{1F600}', '\u{10348}', ' ', '.', '+', "'"];
    forSeeds(1500, (seed) => {
      const r = rand(seed);
      const name = `${r.pick(['r', 'Ä', '中', '\u{1F600}', '1'])}${Array.from({ length: r.int(0, 40) }, () => r.pick(alphabet)).join('')}${r.pick(['', 'x', '.zip', '.tar.gz', 'ü'])}`;
      if (/\.\.|[. ]$/.test(name) || isReservedOnWindows(name) || name.normalize('NFC') !== name) return;
      expect(safeFileName(name, 'f.zip'), JSON.stringify(name)).toEqual({ name, changed: false });
    });
  });

  it('shortens a long safe name to the byte limit: a prefix of it, whole characters, the extension kept', () => {
    forSeeds(1500, (seed) => {
      const r = rand(seed);
      const unit = r.pick(['a', 'ä', '中', '\u{1F600}', 'ab ', 'x.y', 'Ω-']);
      // the last extension is the one kept (".tar.gz" keeps ".gz")
      const ext = r.pick(unit.includes('.') ? ['.zip', '.gz', '.exe'] : ['.zip', '.gz', '.exe', '']);
      const raw = `${r.pick(['report', 'Ä', '\u{1F600}'])}${unit.repeat(r.int(40, 120))}${ext}`;
      if (Buffer.byteLength(raw) <= MAX_NAME_BYTES) return;
      const { name, changed } = safeFileName(raw, 'f.zip');
      const shown = JSON.stringify(name);
      expect(changed).toBe(true);
      expect(Buffer.byteLength(name), shown).toBeLessThanOrEqual(MAX_NAME_BYTES);
      expect(Buffer.byteLength(name), shown).toBeGreaterThan(MAX_NAME_BYTES - 16);
      const stem = ext !== '' && name.endsWith(ext) ? name.slice(0, -ext.length) : name;
      if (ext !== '') expect(name.endsWith(ext), shown).toBe(true);
      expect(raw.startsWith(stem), shown).toBe(true);
      expect(loneSurrogateAt(name)).toBe(-1);
      expect(name).not.toMatch(/[. ]$/);
    });
  });
});

describe('server file names: cases the fuzzing found', () => {
  it('gives a name Windows reserves for a device a leading _, in any case, with or without an extension', () => {
    for (const [raw, placed] of [
      ['CON', '_CON'],
      ['nul.txt', '_nul.txt'],
      ['Com1.tar.gz', '_Com1.tar.gz'],
      ['LPT9', '_LPT9'],
      ['prn .zip', '_prn .zip'],
      ['aux.', '_aux'],
      ['COM\u00B9.zip', '_COM\u00B9.zip'],
      ['conout$', '_conout$'],
      ['../../CON', '_CON'],
    ] as const) {
      expect(safeFileName(raw, 'software-bundle.zip'), raw).toEqual({ name: placed, changed: true });
    }
    // names that only start like a device stay as they are
    for (const raw of ['console.txt', 'COM10.zip', 'nullable.zip', 'LPT.zip', 'CON_2.zip', 'my-con.txt']) {
      expect(safeFileName(raw, 'software-bundle.zip'), raw).toEqual({ name: raw, changed: false });
    }
  });

  it('a device name sent in filename* or filename is not placed as it is', () => {
    const viaExt = parseContentDisposition(`attachment; filename*=UTF-8''NUL.zip; filename="bundle.zip"`)?.filename;
    expect(safeFileName(viaExt, 'software-bundle.zip')).toEqual({ name: '_NUL.zip', changed: true });
    const viaPlain = parseContentDisposition('attachment; filename=lpt1.exe')?.filename;
    expect(safeFileName(viaPlain, 'software-bundle.zip')).toEqual({ name: '_lpt1.exe', changed: true });
  });

  it('shortening a long name does not leave a device name, nor one over the byte limit', () => {
    // the cut drops "x" and the spaces before ".zip": what is left would be "CON.zip"
    expect(safeFileName(`CON${' '.repeat(300)}x.zip`, 'f.zip')).toEqual({ name: '_CON.zip', changed: true });
    const long = safeFileName(`con.${'a'.repeat(300)}`, 'f.zip');
    expect(long.name).toBe(`_con.${'a'.repeat(MAX_NAME_BYTES - 5)}`);
    expect(Buffer.byteLength(long.name)).toBe(MAX_NAME_BYTES);
  });
});

describe('server file names: time', () => {
  // A response header may be up to 16 KiB (Node's and undici's default limit): a name that long
  // must not keep the process busy. Each took seconds when shortening or trimming went over the
  // name once per character.
  it.each([
    ['16,000 letters', `${'a'.repeat(16_000)}.zip`, `${'a'.repeat(MAX_NAME_BYTES - 4)}.zip`],
    ['spaces inside', `a${' '.repeat(16_000)}x.zip`, 'a.zip'],
    ['dots and spaces inside', `a${'. '.repeat(8_000)}x`, 'a. x'],
    ['ideographic spaces inside', `a${'\u3000 '.repeat(8_000)}x.zip`, 'a.zip'],
  ])('a name of %s is made safe in a moment', (_, raw, placed) => {
    const started = performance.now();
    const fromHeader = parseContentDisposition(`attachment; filename="${raw}"`)?.filename;
    const result = safeFileName(fromHeader, 'f.zip');
    const ms = performance.now() - started;
    expect(result).toEqual({ name: placed, changed: true });
    expect(ms).toBeLessThan(250);
  });
});
