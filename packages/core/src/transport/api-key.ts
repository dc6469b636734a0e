/**
 * What is wrong with an API key that cannot go into an HTTP header as it is (a line break, a space,
 * a control or non-ASCII character), without showing the key; undefined for a usable one. A key
 * read from a file written with `echo` ends with a line break: sent as it is, the HTTP client
 * refuses the header, and with several calls at once it left them pending without an end.
 */
export function apiKeyProblem(key: string): string | undefined {
  const at = [...key].findIndex((ch) => !/^[\x21-\x7e]$/.test(ch));
  if (at < 0) return undefined;
  const ch = [...key][at]!;
  const what =
    ch === '\n' || ch === '\r'
      ? 'a line break'
      : ch === ' ' || ch === '\t'
        ? 'a blank'
        : `the character U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  const where = at === [...key].length - 1 ? 'at its end' : at === 0 ? 'at its start' : `at position ${at + 1}`;
  return `the API key holds ${what} ${where}, which no HTTP header may carry: set DQ_API_KEY (or --api-key) to the key alone (a key file written with echo ends with a line break: write it with printf '%s' or echo -n)`;
}
