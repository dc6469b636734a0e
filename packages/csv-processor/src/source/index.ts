import { openCsvSource } from './csv-source.js';
import { openJsonArraySource, openNdjsonSource } from './json-source.js';
import type { Source, SourceOptions } from './types.js';

export type * from './types.js';
export { frameRecords } from './framer.js';
export type { RawRecord, FramerOptions } from './framer.js';

/** Opens `options.path` as CSV, a JSON array or NDJSON. */
export function openSource(options: SourceOptions): Promise<Source> {
  switch (options.format) {
    case 'csv':
      return openCsvSource(options);
    case 'ndjson':
      return openNdjsonSource(options);
    case 'json':
      return openJsonArraySource(options);
  }
}
