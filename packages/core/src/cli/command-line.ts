/**
 * Checks of a parsed command line every CLI of the project shares: a flag given an empty value, the
 * secrets a command line holds, which no message about it may repeat, and the entries of `--map`.
 */
import { REDACTED } from '../log/index.js';

/**
 * Refuses a value flag given an empty value (`--rejects=`, or `--client-id "$UNSET"`), which would
 * otherwise stand for a default or a file named "". `usage` is the CLI's help text: the error says
 * what to write, e.g. `write --rejects <file>, or leave the flag out`. A flag given twice is no
 * mistake: the last one counts, so a script can append an override (a `multiple` flag's values add up).
 */
export function checkEmptyFlags(values: Readonly<Record<string, unknown>>, usage: string, fail: (flag: string, problem: string) => Error): void {
  for (const [name, value] of Object.entries(values)) {
    if (!(Array.isArray(value) ? value : [value]).includes('')) continue;
    const what = new RegExp(`--${name} (<\\S+)`).exec(usage)?.[1] ?? '<value>';
    throw fail(`--${name}`, `the value is empty: write --${name} ${what}, or leave the flag out`);
  }
}

/** `text` with the password of each URL in it (`scheme://user:password@host`) shown as `scheme://user:[redacted]@host`. */
export function withoutUrlPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^/?#\s:@]*):[^/?#\s@]+@/gi, `$1:${REDACTED}@`);
}

/**
 * A redactor for messages about the command line `argv` and the environment `env`: it removes the
 * values of `secretFlags` (e.g. `api-key`) and `secretVariables` (e.g. `DQ_API_KEY`) and the password
 * of every URL, so that not even a message about a command line that could not be read shows them.
 */
export function commandLineRedactor(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  secretFlags: readonly string[],
  secretVariables: readonly string[],
): (text: string) => string {
  const secrets: string[] = [];
  argv.forEach((arg, i) => {
    for (const flag of secretFlags) {
      if (arg === `--${flag}` && i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) secrets.push(argv[i + 1]!);
      else if (arg.startsWith(`--${flag}=`)) secrets.push(arg.slice(flag.length + 3));
    }
  });
  for (const name of secretVariables) secrets.push(env[name] ?? '');
  // A value shorter than 4 characters is no key worth the name, and replacing it everywhere would
  // garble the message; the longest first, so that no part of one is left behind.
  const found = secrets.filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  return (text) => withoutUrlPasswords(found.reduce((out, secret) => out.split(secret).join(REDACTED), text));
}

/** One `<field>=<name>` entry of a connector's `--map`, as written and as read. */
export interface MapEntry {
  /** The entry as written (trimmed), for messages. */
  readonly text: string;
  readonly field: string;
  /** The name (a column, a JSON pointer) after the first `=`; undefined when the entry has none. */
  readonly value: string | undefined;
  /** Whether the name was quoted. */
  readonly quoted: boolean;
}

/**
 * Splits a `--map` text into its entries: `<field>=<name>` separated by commas. A name is taken
 * without the spaces around it, up to the next comma; one that starts with `"` is quoted, as a CSV
 * field is: it ends at the next lone `"`, holds commas, `=` and edge spaces as they are, and `""`
 * inside it stands for one `"` (`street="Strasse, Nr"`, `zip=" PLZ "`). Only spaces may follow the
 * closing quote. A `"` later in an unquoted name is an ordinary character. `noun` is what the
 * messages call the name; `fail` builds the error.
 */
export function mapEntries(text: string, noun: 'name' | 'pointer', fail: (problem: string) => Error): MapEntry[] {
  const entries: MapEntry[] = [];
  const n = text.length;
  const space = (i: number): boolean => i < n && /\s/.test(text[i]!);
  let i = 0;
  while (i < n) {
    const start = i;
    while (i < n && text[i] !== '=' && text[i] !== ',') i++;
    const field = text.slice(start, i).trim();
    if (i === n || text[i] === ',') {
      const entry = text.slice(start, i).trim();
      if (entry !== '') entries.push({ text: entry, field, value: undefined, quoted: false });
      i++;
      continue;
    }
    let j = i + 1;
    while (space(j)) j++;
    if (text[j] !== '"') {
      while (j < n && text[j] !== ',') j++;
      entries.push({ text: text.slice(start, j).trim(), field, value: text.slice(i + 1, j).trim(), quoted: false });
      i = j + 1;
      continue;
    }
    let value = '';
    for (j++; ; j++) {
      if (j === n)
        throw fail(`"${text.slice(start).trim()}": the quote after ${field}= is not closed; end the ${noun} with " (write "" for a quote inside it)`);
      if (text[j] !== '"') value += text[j];
      else if (text[j + 1] === '"') value += text[++j];
      else break;
    }
    j++;
    while (space(j)) j++;
    if (j < n && text[j] !== ',') {
      throw fail(
        `"${text.slice(start, text.indexOf(',', j) === -1 ? n : text.indexOf(',', j)).trim()}": text after the closing quote of ${field}=; end the entry there, or write "" for a quote inside the ${noun}`,
      );
    }
    entries.push({ text: text.slice(start, j).trim(), field, value, quoted: true });
    i = j + 1;
  }
  return entries;
}
