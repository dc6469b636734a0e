// Minimal typings for the parts of stream-json 1.9 that dq-csv uses (the package ships none).
declare module 'stream-json/streamers/StreamArray.js' {
  import type { Duplex } from 'node:stream';
  /** Array streamer: objects `{ key: index, value }` for each top-level array element of a token stream. */
  const StreamArray: { make(options?: Record<string, unknown>): Duplex; withParser(options?: Record<string, unknown>): Duplex };
  export default StreamArray;
}

declare module 'stream-json/Parser.js' {
  import type { Duplex } from 'node:stream';
  /** JSON text (bytes) in, tokens out; fails with an Error naming what it expected. */
  const Parser: { make(options?: Record<string, unknown>): Duplex };
  export default Parser;
}
