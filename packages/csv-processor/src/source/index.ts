import { openCsvSource } from './csv-source.js';
import type { Source, SourceItem, SourceOptions } from './types.js';

export type * from './types.js';
export { frameRecords } from './framer.js';
export { asciiBefore } from './input-bytes.js';
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
  // Hands out the first record, then the source's own iterator: no extra layer per record.
  let prefetched: IteratorResult<SourceItem> | undefined = first;
  const items: AsyncIterable<SourceItem> = {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        if (prefetched === undefined) return iterator.next();
        const result = prefetched;
        prefetched = undefined;
        return Promise.resolve(result);
      },
      return: async (value?: unknown) => {
        prefetched = undefined;
        return (await iterator.return?.(value)) ?? { done: true, value: undefined };
      },
    }),
  };
  return { ...source, items, close: source.close };
}

function openFormat(options: SourceOptions): Promise<Source> {
  switch (options.format) {
    case 'csv':
      return openCsvSource(options);
    // The JSON parser (stream-json) is loaded for JSON input only.
    case 'ndjson':
      return import('./json-source.js').then((m) => m.openNdjsonSource(options));
    case 'json':
      return import('./json-source.js').then((m) => m.openJsonArraySource(options));
  }
}
