/**
 * JSON numbers kept as written. `JSON.parse` turns every number into a double, so an id such as
 * 12345678901234567890 would come out as 12345678901234567000, and 1.10 as 1.1: input values must
 * come out as they came in (docs/architecture.md, "Input values"). A number whose text a double
 * does not give back is read as a {@link JsonNumber} holding that text, and {@link stringifyJson}
 * writes it back unchanged; every other value is what `JSON.parse` makes of it.
 */

/** A JSON number whose text a double would not give back (too many digits, 1.0, 1e3, -0). */
export class JsonNumber {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** The value of a number literal: a double when it gives the text back, else the text kept. */
export function jsonNumber(text: string): number | JsonNumber {
  const value = Number(text);
  return JSON.stringify(value) === text ? value : new JsonNumber(text);
}

// A number a double may not give back has 16 digits in a row, a fraction or exponent, or is -0;
// text without any of these (the common case) is left to JSON.parse alone.
const MAYBE_LOSSY = /\d{16}|\d[.eE]|-0/;

/** `JSON.parse`, its errors included, with numbers kept as written (see above). */
export function parseJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (!MAYBE_LOSSY.test(text)) return value;
  return new Reader(text).value();
}

/** `JSON.stringify` of a value {@link parseJson} made (no undefined, function or cycle in it). */
export function stringifyJson(value: unknown): string {
  if (value instanceof JsonNumber) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => stringifyJson(v === undefined ? null : v)).join(',')}]`;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const parts: string[] = [];
    for (const [key, v] of Object.entries(value)) if (v !== undefined) parts.push(`${JSON.stringify(key)}:${stringifyJson(v)}`);
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const LITERAL = /true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Reads text JSON.parse accepted already: no error handling needed. */
class Reader {
  #at = 0;
  constructor(readonly text: string) {}

  value(): unknown {
    this.#space();
    const c = this.text[this.#at];
    if (c === '{') {
      this.#at += 1;
      const object: Record<string, unknown> = {};
      this.#space();
      if (this.text[this.#at] === '}') return ((this.#at += 1), object);
      for (;;) {
        this.#space();
        const key = this.#string();
        this.#space();
        this.#at += 1; // :
        const value = this.value();
        // The same key twice: the last one wins, as in JSON.parse (defineProperty keeps __proto__ a key).
        Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
        this.#space();
        if (this.text[this.#at++] === '}') return object;
      }
    }
    if (c === '[') {
      this.#at += 1;
      const array: unknown[] = [];
      this.#space();
      if (this.text[this.#at] === ']') return ((this.#at += 1), array);
      for (;;) {
        array.push(this.value());
        this.#space();
        if (this.text[this.#at++] === ']') return array;
      }
    }
    if (c === '"') return this.#string();
    LITERAL.lastIndex = this.#at;
    const literal = LITERAL.exec(this.text)![0];
    this.#at += literal.length;
    return literal === 'true' ? true : literal === 'false' ? false : literal === 'null' ? null : jsonNumber(literal);
  }

  #string(): string {
    const start = this.#at;
    let i = start + 1;
    for (;;) {
      const c = this.text.charCodeAt(i);
      if (c === 0x5c) i += 2;
      else if (c === 0x22) break;
      else i += 1;
    }
    this.#at = i + 1;
    return JSON.parse(this.text.slice(start, i + 1)) as string;
  }

  #space(): void {
    while (/[ \t\n\r]/.test(this.text[this.#at] ?? '')) this.#at += 1;
  }
}
