/**
 * `Content-Disposition` (RFC 6266, with RFC 8187 `filename*`) parsing, and turning a file name a
 * server chose into one that is safe to create inside a target directory.
 */

/** A parsed `Content-Disposition` header. */
export interface ContentDisposition {
  /** Disposition type in lower case, e.g. `attachment`. */
  type: string;
  /** The file name as the server sent it: `filename*` when decodable, else `filename`. Unsanitised. */
  filename: string | undefined;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;

/**
 * Parses a `Content-Disposition` value. Parameter names are case-insensitive; `filename*`
 * (`UTF-8''na%C3%AFve.zip` or `ISO-8859-1'en'…`) wins over `filename`. Returns undefined for an
 * empty or unreadable header. The file name is NOT safe to use as a path: see {@link safeFileName}.
 */
export function parseContentDisposition(header: string | undefined): ContentDisposition | undefined {
  if (header === undefined) return undefined;
  let rest = header.trim();
  const type = TOKEN.exec(rest)?.[0];
  if (type === undefined) return undefined;
  rest = rest.slice(type.length);
  const params = new Map<string, string>();
  while (true) {
    rest = rest.replace(/^\s*/, '');
    if (!rest.startsWith(';')) break;
    rest = rest.slice(1).replace(/^\s*/, '');
    const name = TOKEN.exec(rest)?.[0];
    const after = name === undefined ? rest : rest.slice(name.length).replace(/^\s*/, '');
    if (name === undefined || !after.startsWith('=')) {
      // A parameter that is not `name=value` (`attachment; foo; filename=x`) is skipped, as
      // browsers do: the file name after it is still the server's.
      const next = rest.indexOf(';');
      if (next < 0) break;
      rest = rest.slice(next);
      continue;
    }
    rest = after.slice(1).replace(/^\s*/, '');
    let value: string;
    if (rest.startsWith('"')) {
      const q = readQuoted(rest);
      if (q === undefined) break;
      value = q.value;
      rest = rest.slice(q.length);
    } else {
      value = /^[^;\s]*/.exec(rest)?.[0] ?? '';
      rest = rest.slice(value.length);
    }
    const key = name.toLowerCase();
    if (!params.has(key)) params.set(key, value); // first occurrence wins (RFC 6266 4.1 leaves repeats undefined)
  }
  const extended = params.has('filename*') ? decodeExtValue(params.get('filename*') ?? '') : undefined;
  return { type: type.toLowerCase(), filename: extended || params.get('filename') };
}

function readQuoted(s: string): { value: string; length: number } | undefined {
  let out = '';
  for (let i = 1; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length) out += s[++i];
    else if (c === '"') return { value: out, length: i + 1 };
    else out += c;
  }
  return undefined;
}

/** RFC 8187 ext-value: `charset'[language]'pct-encoded`. Undefined when unreadable. */
function decodeExtValue(v: string): string | undefined {
  const m = /^([^']*)'[^']*'(.*)$/.exec(v);
  if (m === null) return undefined;
  const charset = (m[1] ?? '').toLowerCase();
  const encoded = m[2] ?? '';
  // RFC 8187 value-chars: attr-char or %XX, nothing else. A value breaking that (a stray `%`, raw
  // bytes, spaces) was not encoded as the RFC says, so guessing at it could produce any name.
  if (!/^(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9!#$&+\-.^_`|~])*$/.test(encoded)) return undefined;
  try {
    if (charset === 'utf-8') return decodeURIComponent(encoded);
    if (charset === 'iso-8859-1') {
      return encoded.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** The outcome of {@link safeFileName}. */
export interface SafeFileName {
  /** A name without directories, control characters or leading dots; never `.`, `..` or a Windows device name. */
  name: string;
  /** Whether `name` differs from what the server sent (callers should warn). */
  changed: boolean;
}

const MAX_NAME_BYTES = 200;

/**
 * Makes a server-chosen file name safe to create in a target directory: only the part after the
 * last `/` or `\` is kept; control characters, `<>:"|?*`, and invisible characters
 * (bidirectional overrides and isolates such as U+202E, which shows `\u202Egpj.exe` as
 * "exe.jpg", zero-width spaces and joiners, soft hyphens, byte order marks, line and paragraph
 * separators, Hangul fillers, variation selectors: every format character and every character
 * Unicode says to show as nothing) are replaced with `_`; leading dots and trailing dots/spaces are removed, any
 * remaining `..` is collapsed, and the name is shortened to 200 bytes keeping its extension (and
 * trimmed again, so shortening leaves no trailing dot or space). A name Windows reserves for a
 * device (`CON`, `PRN`, `AUX`, `NUL`, `COM0`–`COM9`, `LPT0`–`LPT9`, `CONIN$`, `CONOUT$`, in any
 * case, also with an extension such as `nul.txt` or spaces before it), which Windows would open
 * instead of creating a file, gets a leading `_` (`_nul.txt`). If nothing usable is left,
 * `fallback` (itself sanitised the same way, and `download` as a last resort) is used.
 * `../../etc/x` becomes `x`.
 */
export function safeFileName(raw: string | undefined, fallback: string): SafeFileName {
  const cleaned = raw === undefined ? '' : clean(raw);
  if (cleaned !== '') return { name: cleaned, changed: cleaned !== raw };
  const fb = clean(fallback);
  return { name: fb === '' ? 'download' : fb, changed: true };
}

// Cc: controls; Cf: format characters (bidi marks, overrides and isolates, zero-width characters,
// soft hyphen, BOM); Cs: lone surrogates; Zl/Zp: line and paragraph separators; and every other
// character Unicode says to show as nothing (Default_Ignorable_Code_Point: Hangul fillers, the
// combining grapheme joiner, variation selectors, Khmer inherent vowels, code points reserved as
// such), with which two names that differ look the same.
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}<>:"|?*]/gu;

/** Leading dots and spaces (hidden files) and trailing ones (Windows drops them) removed. */
const trim = (name: string): string => trimEnd(name.replace(/\.{2,}/g, '.').replace(/^[.\s]+/, ''));

/**
 * Trailing dots and white space removed, by a scan from the end: the regular expression
 * `/[.\s]+$/` would try every run of them in the name in turn, so a name of a header's 16 KiB with
 * many spaces (not at its end) would take seconds, the process doing nothing else meanwhile.
 */
function trimEnd(name: string): string {
  let end = name.length;
  while (end > 0 && /[.\s]/.test(name[end - 1] ?? '')) end--;
  return name.slice(0, end);
}

/**
 * Device names Windows opens instead of a file, whatever the extension: the part before the first
 * dot, trailing spaces dropped, compared without case (`nul.txt`, `COM1 .tar.gz`). The superscript
 * digits ¹²³ count as digits there.
 */
const WINDOWS_DEVICE = /^(?:CON|PRN|AUX|NUL|COM[0-9\u00B9\u00B2\u00B3]|LPT[0-9\u00B9\u00B2\u00B3]|CONIN\$|CONOUT\$) *(?:\.|$)/i;

function clean(raw: string): string {
  let name = raw.normalize('NFC');
  name = name.split(/[/\\]/).pop() ?? '';
  name = shorten(trim(name.replace(UNSAFE, '_')));
  // Checked after shortening, which can bring a device name to the front ("CON" + spaces + "x.zip"
  // becomes "CON.zip"); the `_` is kept by a second shortening, so the name stays no device name.
  if (WINDOWS_DEVICE.test(name)) name = shorten(`_${name}`);
  return name;
}

/** Cuts a trimmed name to {@link MAX_NAME_BYTES}, keeping its extension and whole characters. */
function shorten(name: string): string {
  if (Buffer.byteLength(name) <= MAX_NAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
  // Whole characters (code points) from the front while they fit: never half a surrogate pair
  // or of a UTF-8 sequence.
  let stem = '';
  let room = MAX_NAME_BYTES - Buffer.byteLength(ext);
  for (const ch of name.slice(0, name.length - ext.length)) {
    room -= Buffer.byteLength(ch);
    if (room < 0) break;
    stem += ch;
  }
  // The cut may end the stem on a space or dot ("report .zip", "report..zip"): trim again.
  return trim(trimEnd(stem) + ext);
}
