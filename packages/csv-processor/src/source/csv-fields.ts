/** Splits one framed record into fields; throws when the quoting is broken. */
export type FieldSplitter = (text: string) => string[];

/**
 * A splitter for `delimiter` (one ASCII character other than a quote, CR or LF). Values come out
 * as they are in the file, byte for byte:
 *
 * - A field that starts with `"` is quoted (RFC 4180): it holds delimiters, newlines and doubled
 *   quotes (`""` is one `"`), and must end with its closing quote, right before the delimiter or
 *   the end of the record. Anything after the closing quote, spaces included (`"ab" ;`), is broken
 *   quoting: the field's value is not known, so the record is rejected rather than guessed.
 * - Any other field is unquoted and taken as it is, up to the next delimiter: spaces kept, and a
 *   `"` inside it (`Monitor 24" Zoll`, ` "ab" `) a literal character, as spreadsheets write it.
 * - A CR outside a quoted field that is not part of the record's line terminator (the framer
 *   drops that) splits the record, as a spreadsheet would read it: broken quoting.
 *
 * The framer (framer.ts) follows the same rule to find where a record ends. The splitter is
 * written out here rather than taken from a CSV library because a library's parser trims or
 * skips the spaces around a quoted field and takes a quote inside an unquoted field as opening
 * one, and because it must agree exactly with the framer.
 */
export function fieldSplitter(delimiter: string): FieldSplitter {
  return (text) => {
    if (!text.includes('"') && !text.includes('\r')) return text.split(delimiter);
    const fields: string[] = [];
    let at = 0;
    for (;;) {
      if (text.charCodeAt(at) === 0x22) {
        let value = '';
        let from = at + 1;
        for (;;) {
          const q = text.indexOf('"', from);
          if (q === -1) throw new Error(`the quote opening field ${fields.length + 1} is never closed`);
          value += text.slice(from, q);
          if (text.charCodeAt(q + 1) !== 0x22) {
            at = q + 1;
            break;
          }
          value += '"';
          from = q + 2;
        }
        fields.push(value);
        if (at === text.length) return fields;
        if (text[at] !== delimiter) {
          throw new Error(`field ${fields.length} goes on after its closing quote; a quoted field must end with its quote`);
        }
        at += 1;
      } else {
        const d = text.indexOf(delimiter, at);
        const value = text.slice(at, d === -1 ? text.length : d);
        if (value.includes('\r'))
          throw new Error(`field ${fields.length + 1} holds a bare carriage return: a line ends in LF or CRLF, a CR inside a value needs the field quoted`);
        fields.push(value);
        if (d === -1) return fields;
        at = d + 1;
      }
    }
  };
}
