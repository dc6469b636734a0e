import { ParserOptions } from '@fast-csv/parse';
import { Parser } from '@fast-csv/parse/build/src/parser/index.js';

/** Splits one framed record into fields; throws when the quoting is broken. */
export type FieldSplitter = (text: string) => string[];

/**
 * A splitter for `delimiter`. Records with a quote or a bare CR go through @fast-csv/parse's
 * parser (RFC 4180 quoting, doubled quotes, quoted delimiters and newlines); plain records are
 * split directly, which gives the same fields and is several times faster.
 */
export function fieldSplitter(delimiter: string): FieldSplitter {
  const parser = new Parser(new ParserOptions({ delimiter, ignoreEmpty: false }));
  return (text) => {
    if (!text.includes('"') && !text.includes('\r')) return text.split(delimiter);
    const { rows } = parser.parse(text, false);
    if (rows.length !== 1) {
      throw new Error(`the record holds ${rows.length} rows: a bare carriage return splits it`);
    }
    return rows[0] as string[];
  };
}
