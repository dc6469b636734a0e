/**
 * Where the values of a JSON object's top-level members are in its text, so one member can be
 * replaced while every other byte stays as the producer wrote it: re-serialising the parsed value
 * would round numbers beyond double precision (`12345678901234567890`), drop trailing zeros
 * (`1.10`), turn numbers out of range into `null` (`1e400`) and lose the spacing. The same for the
 * value a JSON pointer refers to, so a mapped number is read as written.
 *
 * The text must be one that `JSON.parse` read as an object (a leading byte order mark aside): the
 * scanner checks nothing, it only steps over strings (with their escapes) and nested values.
 * It loops instead of recursing, so a deeply nested value cannot overflow the stack.
 */

/** The `[start, end)` spans of the values of every top-level member of `text` named `name`, in order. */
export function memberValueSpans(text: string, name: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  forEachMember(text, skipSpace(text, text.charCodeAt(0) === BOM ? 1 : 0), (key, start, end) => {
    if (key === name) spans.push([start, end]);
  });
  return spans;
}

/**
 * The `[start, end)` span of the value an RFC 6901 pointer's `tokens` refer to (of members with the
 * same name, the last, as `JSON.parse` reads them), or `undefined` when they refer to nothing.
 */
export function pointerValueSpan(text: string, tokens: readonly string[]): [number, number] | undefined {
  let at = skipSpace(text, text.charCodeAt(0) === BOM ? 1 : 0);
  for (const token of tokens) {
    let found: number | undefined;
    if (text.charCodeAt(at) === OPEN_BRACE) {
      forEachMember(text, at, (key, start) => {
        if (key === token) found = start;
      });
    } else if (text.charCodeAt(at) === OPEN_BRACKET && /^(0|[1-9]\d*)$/.test(token)) {
      let left = Number(token);
      let i = skipSpace(text, at + 1);
      while (text.charCodeAt(i) !== CLOSE_BRACKET) {
        if (left-- === 0) {
          found = i;
          break;
        }
        i = skipSpace(text, valueEnd(text, i));
        if (text.charCodeAt(i) !== COMMA) break;
        i = skipSpace(text, i + 1);
      }
    }
    if (found === undefined) return undefined;
    at = found;
  }
  return [at, valueEnd(text, at)];
}

/** Calls `visit` with the name and value span of each member of the object whose `{` is at `open`, in order. */
function forEachMember(text: string, open: number, visit: (name: string, start: number, end: number) => void): void {
  let i = skipSpace(text, open + 1);
  if (text.charCodeAt(i) === CLOSE_BRACE) return;
  for (;;) {
    const keyEnd = stringEnd(text, i);
    const raw = text.slice(i + 1, keyEnd - 1);
    // A name written with escapes ("\u0064q") is the same member as one written without.
    const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
    i = skipSpace(text, skipSpace(text, keyEnd) + 1); // past ':'
    const end = valueEnd(text, i);
    visit(key, i, end);
    i = skipSpace(text, end);
    if (text.charCodeAt(i) !== COMMA) return;
    i = skipSpace(text, i + 1);
  }
}

/** `text` with each span replaced by `replacement` (spans in order, not overlapping). */
export function replaceSpans(text: string, spans: ReadonlyArray<readonly [number, number]>, replacement: string): string {
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    out += text.slice(at, start) + replacement;
    at = end;
  }
  return out + text.slice(at);
}

const BOM = 0xfeff;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The index of the first character at or after `i` that is not JSON whitespace. */
function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The index just past the string whose opening quote is at `i`. */
function stringEnd(text: string, i: number): number {
  for (let from = i + 1; ;) {
    const quote = text.indexOf('"', from);
    // Escaped when an odd number of backslashes precede it.
    let b = quote - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--;
    if ((quote - 1 - b) % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The index just past the value that starts at `i`. */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === QUOTE) return stringEnd(text, i);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        i = stringEnd(text, i);
        continue;
      }
      if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return i + 1;
      i++;
    }
    return i;
  }
  // A number, true, false or null: up to the next delimiter.
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) return i;
    i++;
  }
  return i;
}
