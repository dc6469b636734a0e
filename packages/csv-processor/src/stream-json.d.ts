// Minimal typings for the parts of stream-json 1.9 that dq-csv uses (the package ships none).
declare module 'stream-json/streamers/StreamArray.js' {
  import type { Duplex } from 'node:stream';
  /** Parser + array streamer: objects `{ key: index, value }` for each top-level array element. */
  const StreamArray: { withParser(options?: Record<string, unknown>): Duplex };
  export default StreamArray;
}
