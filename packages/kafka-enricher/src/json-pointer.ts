/** A parsed JSON pointer: its source text and its unescaped reference tokens. */
export interface JsonPointer {
  readonly text: string;
  readonly tokens: readonly string[];
}

/**
 * Parses an RFC 6901 JSON pointer: `""` is the whole document, otherwise `/` + tokens separated by
 * `/`, where `~1` stands for `/` and `~0` for `~` (unescaped in that order, section 4).
 *
 * @throws RangeError naming the pointer when it does not start with `/` or has a bad `~` escape.
 */
export function parsePointer(text: string): JsonPointer {
  if (text === '') return { text, tokens: [] };
  if (!text.startsWith('/')) throw new RangeError(`"${text}" is not a JSON pointer: it must start with "/" (the member ${text} of the value: /${text})`);
  const tokens = text
    .slice(1)
    .split('/')
    .map((raw) => {
      if (/~[^01]|~$/.test(raw))
        throw new RangeError(`"${text}" is not a JSON pointer: "~" must be followed by 0 or 1 (write ~0 for a "~" in a name, ~1 for a "/")`);
      return raw.replace(/~1/g, '/').replace(/~0/g, '~');
    });
  return { text, tokens };
}

/**
 * The value `pointer` refers to in `document`, or `undefined` when it refers to nothing (a missing
 * member, an array index out of range or not in RFC 6901's decimal form, or a step into a scalar).
 */
export function resolvePointer(document: unknown, pointer: JsonPointer): unknown {
  let current: unknown = document;
  for (const token of pointer.tokens) {
    if (Array.isArray(current)) {
      // Section 4: an array index is "0" or digits without a leading zero; "-" names no element.
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, token)) return undefined;
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}
