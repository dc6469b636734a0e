import { openCsvSource } from './csv-source.js';
import { openJsonArraySource, openNdjsonSource } from './json-source.js';
import type { Source, SourceItem, SourceOptions } from './types.js';

export type * from './types.js';
export { frameRecords } from './framer.js';
export type { RawRecord, FramerOptions } from './framer.js';

/**
 * Opens `options.path` as CSV, a JSON array or NDJSON. The first record is read here: an input that
 * cannot be read even that far (not an array, broken from the start, undecodable) fails to open,
 * before the caller has written anything.
 */
export async function openSource(options: SourceOptions): Promise<Source> {
  const source = await openFormat(options);
  const iterator = source.items[Symbol.asyncIterator]();
  let first: IteratorResult<SourceItem>;
  try {
    first = await iterator.next();
  } catch (err) {
    await source.close();
    throw err;
  }
  async function* items(): AsyncGenerator<SourceItem> {
    if (first.done) return;
    yield first.value;
    try {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
    } finally {
      await iterator.return?.();
    }
  }
  return { ...source, items: items(), close: source.close };
}

function openFormat(options: SourceOptions): Promise<Source> {
  switch (options.format) {
    case 'csv':
      return openCsvSource(options);
    case 'ndjson':
      return openNdjsonSource(options);
    case 'json':
      return openJsonArraySource(options);
  }
}
