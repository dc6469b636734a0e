/**
 * JSON numbers kept as written. `JSON.parse` turns every number into a double, so an id such as
 * 12345678901234567890 would come out as 12345678901234567000, and 1.10 as 1.1: input values must
 * come out as they came in (docs/architecture.md, "Input values"). A number whose text a double
 * does not give back is read as a {@link JsonNumber} holding that text, and {@link stringifyJson}
 * writes it back unchanged; every other value is what `JSON.parse` makes of it. An object's
 * members are written back in the order they were read in, also when JavaScript would list them in
 * another (keys that are array indices: see KEY_ORDER).
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

// A number a double may not give back has 16 digits in a row, a fraction or exponent, or is -0
// (a minus after a digit is no number's: dates such as "2024-01-02" are not looked at twice);
// text without any of these (the common case) is left to JSON.parse alone.
const MAYBE_LOSSY = /\d{16}|\d[.eE]|(?<!\d)-0/;

// A key of only digits (some written as \u0030-\u0039) may be one JavaScript puts first (see
// KEY_ORDER); text without one (the common case) is left to JSON.parse alone. Such a key ends in
// a digit: the cheaper search for that comes first.
const KEY_ENDS_IN_DIGIT = /\d"\s*:/;
const MAYBE_INDEX_KEY = /"(?:\d|\\u003\d)+"\s*:/;

/** `JSON.parse`, its errors included, with numbers and key order kept as written (see above). */
export function parseJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (!MAYBE_LOSSY.test(text) && !(KEY_ENDS_IN_DIGIT.test(text) && MAYBE_INDEX_KEY.test(text))) return value;
  return new Reader(text).value();
}

/**
 * The keys of an object in the order they were written. JavaScript lists an object's keys that
 * are array indices ("0" to "4294967294") first, in ascending order, whatever order they were
 * written in; members must come out in the order they came in (docs/architecture.md, "Input values").
 * An object that {@link setMember} gave such a key holds the order its keys were written in under
 * this symbol: enumerable, so a copy by spread (`{ ...object }`) or `Object.assign` keeps it.
 * {@link stringifyJson} and {@link jsonKeys} follow it, then list the keys added since.
 */
const KEY_ORDER = Symbol('dq-csv JSON key order');

type Ordered = { [KEY_ORDER]?: string[] };

/** Whether JavaScript puts `key` first among an object's keys: an array index, "0" to "4294967294". */
function isIndexKey(key: string): boolean {
  const c = key.charCodeAt(0);
  if (c < 0x30 || c > 0x39) return false; // the common case: one comparison
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4294967295;
}

/**
 * Sets a member of an object being read: defined as an own property (`"__proto__"` is a key like
 * any other, not the object's prototype); the same key twice keeps its first place and takes the
 * last value, as in JSON.parse. The order of the keys is recorded once one of them is an array
 * index (see {@link KEY_ORDER}).
 */
export function setMember(object: object, key: string, value: unknown): void {
  const order = (object as Ordered)[KEY_ORDER];
  if (order !== undefined) {
    if (!Object.hasOwn(object, key)) order.push(key);
  } else if (isIndexKey(key) && !Object.hasOwn(object, key)) {
    // The keys before it hold no array index: JavaScript lists them as written.
    Object.defineProperty(object, KEY_ORDER, { value: [...Object.keys(object), key], enumerable: true, writable: true, configurable: true });
  }
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

/** An object's own keys as written (see {@link KEY_ORDER}), then the ones added since. */
export function jsonKeys(object: object): string[] {
  const order = (object as Ordered)[KEY_ORDER];
  const keys = Object.keys(object);
  if (order === undefined) return keys;
  const written = new Set(order.filter((key) => Object.hasOwn(object, key)));
  return [...written, ...keys.filter((key) => !written.has(key))];
}

/** Text written as it is between the values {@link stringifyJson} writes. */
class Piece {
  constructor(readonly text: string) {}
}

const COMMA = new Piece(',');

/**
 * `JSON.stringify` of a value {@link parseJson} made (no undefined, function or cycle in it). It
 * keeps a list of what is left to write rather than calling itself, so a value nested as deep as
 * JSON.parse reads (thousands of levels) is written too, where a recursion would run out of stack.
 */
export function stringifyJson(value: unknown): string {
  let out = '';
  const todo: unknown[] = [value]; // what is left to write, the next last
  while (todo.length > 0) {
    const next = todo.pop();
    if (next instanceof Piece) out += next.text;
    else if (next instanceof JsonNumber) out += next.text;
    else if (Array.isArray(next)) {
      todo.push(CLOSE_ARRAY);
      for (let i = next.length - 1; i >= 0; i--) {
        todo.push(next[i] === undefined ? null : next[i]);
        if (i > 0) todo.push(COMMA);
      }
      out += '[';
    } else if (next !== null && typeof next === 'object' && !(next instanceof Date)) {
      const entries = (KEY_ORDER in next ? jsonKeys(next).map((key) => [key, (next as Record<string, unknown>)[key]] as const) : Object.entries(next)).filter(
        ([, v]) => v !== undefined,
      );
      todo.push(CLOSE_OBJECT);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, v] = entries[i]!;
        todo.push(v, new Piece(`${i > 0 ? ',' : ''}${JSON.stringify(key)}:`));
      }
      out += '{';
    } else out += JSON.stringify(next) ?? 'null';
  }
  return out;
}

const CLOSE_ARRAY = new Piece(']');
const CLOSE_OBJECT = new Piece('}');

/**
 * The first key written twice in one object of `text`, or undefined. JSON.parse (and so every
 * reader of JSON) keeps only the last of its values: such a record cannot come out as it came in.
 * `value` is {@link parseJson}'s of `text`: a text with no more `"…":` pairs than `value` has keys
 * (the common case) holds no key twice, and is not read again.
 */
export function duplicateKey(text: string, value: unknown): string | undefined {
  let pairs = 0;
  KEY_COLON.lastIndex = 0;
  while (KEY_COLON.test(text)) pairs += 1;
  if (pairs === 0 || pairs <= keyCount(value)) return undefined;
  let first: string | undefined;
  new Reader(text, (key) => (first ??= key)).value();
  return first;
}

/** A quote followed by a colon: every key's end, and the text of a string that holds `":`. */
const KEY_COLON = /"[ \t\n\r]*:/g;

/** The keys of every object in `value`, nested ones included. */
function keyCount(value: unknown): number {
  let count = 0;
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const next = todo.pop();
    if (next === null || typeof next !== 'object' || next instanceof JsonNumber) continue;
    if (Array.isArray(next)) for (const v of next) todo.push(v);
    else
      for (const key in next) {
        if (!Object.hasOwn(next, key)) continue;
        count += 1;
        todo.push((next as Record<string, unknown>)[key]);
      }
  }
  return count;
}

const LITERAL = /true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Reads text JSON.parse accepted already: no error handling needed. The objects and arrays being
 * read are kept on a list, not on the call stack, so it reads as deep a nesting as JSON.parse does.
 */
class Reader {
  #at = 0;
  /** `duplicate` hears each key written a second time in the same object. */
  constructor(
    readonly text: string,
    readonly duplicate?: (key: string) => void,
  ) {}

  value(): unknown {
    // Open objects and arrays, outermost first, each with the key its next value goes to.
    const open: { readonly container: Record<string, unknown> | unknown[]; key: string }[] = [];
    for (;;) {
      let value: unknown;
      this.#space();
      const c = this.text[this.#at];
      if (c === '{' || c === '[') {
        this.#at += 1;
        this.#space();
        if (this.text[this.#at] === (c === '{' ? '}' : ']')) {
          this.#at += 1;
          value = c === '{' ? {} : [];
        } else {
          open.push(c === '{' ? { container: {}, key: this.#key() } : { container: [], key: '' });
          continue;
        }
      } else if (c === '"') value = this.#string();
      else {
        LITERAL.lastIndex = this.#at;
        const literal = LITERAL.exec(this.text)![0];
        this.#at += literal.length;
        value = literal === 'true' ? true : literal === 'false' ? false : literal === 'null' ? null : jsonNumber(literal);
      }
      // The value goes into the innermost open container; each one it closes goes into the next.
      for (;;) {
        const top = open[open.length - 1];
        if (top === undefined) return value;
        if (Array.isArray(top.container)) top.container.push(value);
        // The same key twice: the last one wins, as in JSON.parse; __proto__ stays a key (setMember).
        else {
          if (this.duplicate !== undefined && Object.hasOwn(top.container, top.key)) this.duplicate(top.key);
          setMember(top.container, top.key, value);
        }
        this.#space();
        if (this.text[this.#at++] === ',') {
          if (!Array.isArray(top.container)) top.key = this.#key();
          break;
        }
        open.pop();
        value = top.container;
      }
    }
  }

  /** An object's key and its colon. */
  #key(): string {
    this.#space();
    const key = this.#string();
    this.#space();
    this.#at += 1; // :
    return key;
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
