import { describe, expect, it } from 'vitest';
import { parseChecksumFile, parseContentDisposition, safeFileName } from '../src/download/index.js';

describe('parseContentDisposition', () => {
  it('reads a quoted file name with its version', () => {
    expect(parseContentDisposition('attachment; filename="software-bundle-3.4.1.zip"')).toEqual({ type: 'attachment', filename: 'software-bundle-3.4.1.zip' });
  });

  it('reads token values, any case of parameter names and backslash escapes', () => {
    expect(parseContentDisposition('Attachment; FileName=plain.zip')?.filename).toBe('plain.zip');
    expect(parseContentDisposition('attachment; filename="a \\"quoted\\" name.zip"')?.filename).toBe('a "quoted" name.zip');
  });

  it('prefers filename* (RFC 8187) over filename, in UTF-8 and ISO-8859-1', () => {
    expect(parseContentDisposition(`attachment; filename="EURO rates"; filename*=utf-8''%e2%82%ac%20rates.zip`)?.filename).toBe('€ rates.zip');
    expect(parseContentDisposition(`attachment; filename*=iso-8859-1'en'%A3%20rates.zip; filename="x"`)?.filename).toBe('£ rates.zip');
  });

  it('falls back to filename when filename* cannot be decoded', () => {
    expect(parseContentDisposition(`attachment; filename*=koi8-r''%C1; filename="ok.zip"`)?.filename).toBe('ok.zip');
  });

  it('falls back to filename when an ISO-8859-1 or UTF-8 filename* is not percent-encoded as RFC 8187 requires', () => {
    // a stray %, a bad escape, raw spaces or raw bytes: the server's encoding is unknown, so its name is not guessed at
    expect(parseContentDisposition(`attachment; filename*=iso-8859-1''%E4%ZZrger.zip; filename="aerger.zip"`)?.filename).toBe('aerger.zip');
    expect(parseContentDisposition(`attachment; filename*=ISO-8859-1''50%.zip; filename="fifty.zip"`)?.filename).toBe('fifty.zip');
    expect(parseContentDisposition(`attachment; filename*="ISO-8859-1''two words.zip"; filename="two.zip"`)?.filename).toBe('two.zip');
    expect(parseContentDisposition(`attachment; filename*=UTF-8''caf\u00e9.zip; filename="cafe.zip"`)?.filename).toBe('cafe.zip');
    expect(parseContentDisposition(`attachment; filename*=iso-8859-1''; filename="empty.zip"`)?.filename).toBe('empty.zip');
  });

  it('skips a parameter that is not name=value and reads the file name after it', () => {
    expect(parseContentDisposition('attachment; foo; filename=x.zip')?.filename).toBe('x.zip');
    expect(parseContentDisposition('attachment; =bar; size = ; filename="y.zip"')?.filename).toBe('y.zip');
    expect(parseContentDisposition('attachment; foo')).toEqual({ type: 'attachment', filename: undefined });
  });

  it('returns undefined for a missing or unreadable header and no name for a bare type', () => {
    expect(parseContentDisposition(undefined)).toBeUndefined();
    expect(parseContentDisposition('')).toBeUndefined();
    expect(parseContentDisposition('inline')).toEqual({ type: 'inline', filename: undefined });
  });
});

describe('safeFileName', () => {
  it('keeps an ordinary versioned name unchanged', () => {
    expect(safeFileName('software-bundle-3.4.1.zip', 'software-bundle.zip')).toEqual({ name: 'software-bundle-3.4.1.zip', changed: false });
  });

  it('never lets path separators or .. leave the target directory', () => {
    expect(safeFileName('../../etc/x', 'f.zip')).toEqual({ name: 'x', changed: true });
    expect(safeFileName('..\\..\\windows\\system32\\evil.dll', 'f.zip').name).toBe('evil.dll');
    expect(safeFileName('/etc/passwd', 'f.zip').name).toBe('passwd');
    expect(safeFileName('a..b.zip', 'f.zip').name).toBe('a.b.zip');
    for (const raw of ['..', '.', '../', 'x/..', '...']) {
      expect(safeFileName(raw, 'software-bundle.zip').name).toBe('software-bundle.zip');
    }
  });

  it('replaces control characters and characters Windows forbids', () => {
    expect(safeFileName('bad\u0000name\n\r.zip', 'f.zip').name).toBe('bad_name__.zip');
    expect(safeFileName('c:report?.zip', 'f.zip').name).toBe('c_report_.zip');
  });

  it('replaces bidirectional overrides and invisible format characters and reports the name as changed', () => {
    // U+202E shows "\u202Egpj.exe" as "exe.jpg"
    expect(safeFileName('\u202Egpj.exe', 'f.zip')).toEqual({ name: '_gpj.exe', changed: true });
    expect(safeFileName('invoice\u202Dfdp.exe', 'f.zip')).toEqual({ name: 'invoice_fdp.exe', changed: true });
    expect(safeFileName('a\u2066b\u2069\u200Fc.zip', 'f.zip')).toEqual({ name: 'a_b__c.zip', changed: true });
    // zero-width space, non-joiner, joiner, word joiner, BOM, soft hyphen, line separator
    expect(safeFileName('setup\u200B\u200C\u200D\u2060\uFEFF\u00AD\u2028.zip', 'f.zip')).toEqual({ name: 'setup_______.zip', changed: true });
    // visible non-ASCII letters stay
    expect(safeFileName('Größe-€.zip', 'f.zip')).toEqual({ name: 'Größe-€.zip', changed: false });
  });

  it('replaces invisible characters that are not format characters too: two names that differ never look the same', () => {
    // Hangul fillers, combining grapheme joiner, variation selector, Khmer inherent vowel,
    // Mongolian free variation selector, a code point reserved as default-ignorable
    expect(safeFileName('setup\u115F\u1160\u3164\uFFA0.zip', 'f.zip')).toEqual({ name: 'setup____.zip', changed: true });
    expect(safeFileName('in\u034Fvoice\uFE0F\u17B4\u180B\u2065.pdf', 'f.pdf')).toEqual({ name: 'in_voice____.pdf', changed: true });
    // combining accents are visible and stay (NFC composes them)
    expect(safeFileName('Cafe\u0301 menu.pdf', 'f.pdf')).toEqual({ name: 'Café menu.pdf', changed: true });
    expect(safeFileName('Café menu.pdf', 'f.pdf')).toEqual({ name: 'Café menu.pdf', changed: false });
  });

  it('leaves no trailing space or dot after shortening a long name', () => {
    for (const [raw, ext] of [
      [`${'a'.repeat(195)} ${'b'.repeat(20)}`, ''],
      [`${'a'.repeat(199)}.${'b'.repeat(20)}`, ''],
      [`${'a'.repeat(195)}    ${'b'.repeat(20)}.zip`, '.zip'],
      [`${'ä'.repeat(97)} .${'b'.repeat(20)}.zip`, '.zip'],
    ] as const) {
      const { name, changed } = safeFileName(raw, 'f.zip');
      expect(changed).toBe(true);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200);
      expect(name).not.toMatch(/[.\s]$/);
      expect(name.slice(0, name.length - ext.length)).not.toMatch(/[.\s]$/);
      expect(name.endsWith(ext)).toBe(true);
    }
  });

  it('removes leading dots so nothing becomes a hidden file', () => {
    expect(safeFileName('.bashrc', 'f.zip').name).toBe('bashrc');
  });

  it('uses the fallback when nothing is sent, and "download" when the fallback is unusable too', () => {
    expect(safeFileName(undefined, 'uws.zip')).toEqual({ name: 'uws.zip', changed: true });
    expect(safeFileName('', '..')).toEqual({ name: 'download', changed: true });
  });

  it('shortens very long names to 200 bytes, keeping the extension', () => {
    const { name } = safeFileName(`${'ä'.repeat(300)}.zip`, 'f.zip');
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200);
    expect(name.endsWith('.zip')).toBe(true);
  });
});

describe('parseChecksumFile', () => {
  const hex = 'AB'.repeat(64);
  it('reads sha512sum text and binary mode lines and bare digests, in lower case', () => {
    expect(parseChecksumFile(`${hex}  DE_001.zip\n`, 'DE_001.zip', 's')).toBe(hex.toLowerCase());
    expect(parseChecksumFile(`${hex} *DE_001.zip\r\n`, 'DE_001.zip', 's')).toBe(hex.toLowerCase());
    expect(parseChecksumFile(hex, 'DE_001.zip', 's')).toBe(hex.toLowerCase());
  });

  it('refuses a short digest or a line for another file', () => {
    expect(() => parseChecksumFile('abc  DE_001.zip', 'DE_001.zip', 's')).toThrow(expect.objectContaining({ code: 'checksum-file-invalid' }));
    expect(() => parseChecksumFile(`${hex}  AT_001.zip`, 'DE_001.zip', 's')).toThrow(/AT_001\.zip/);
  });
});
