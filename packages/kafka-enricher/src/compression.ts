import kafkajs from 'kafkajs';
import SnappyCodec from 'kafkajs-snappy';
import lz4 from 'lz4js';
import { decompress as zstdDecompress } from 'fzstd';

/** A kafkajs codec that reads batches only: dq-kafka's own sends are not compressed. */
function readOnlyCodec(name: string, decompress: (buffer: Buffer) => Uint8Array) {
  return () => ({
    compress(): Promise<Buffer> {
      return Promise.reject(new Error(`dq-kafka does not write ${name}-compressed batches`));
    },
    decompress(buffer: Buffer): Promise<Buffer> {
      const out = decompress(buffer);
      return Promise.resolve(Buffer.from(out.buffer, out.byteOffset, out.length));
    },
  });
}

/**
 * Lets kafkajs read batches compressed with snappy, LZ4 or zstd as well as gzip (which it reads by
 * itself): producers and topics often set `compression.type`, and a batch kafkajs cannot
 * decompress stops the consumer at that offset for good (README "Compressed input"). The codecs
 * are kafkajs's snappy plugin and two pure-JavaScript decoders (lz4js, fzstd): no native build.
 * Registering is global to the process and may be repeated.
 */
export function registerCompressionCodecs(): void {
  // kafkajs's CommonJS exports list these by spreading, so Node's ESM loader cannot name them.
  const { CompressionCodecs, CompressionTypes } = kafkajs;
  CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;
  CompressionCodecs[CompressionTypes.LZ4] = readOnlyCodec('lz4', (buffer) => lz4.decompress(buffer));
  CompressionCodecs[CompressionTypes.ZSTD] = readOnlyCodec('zstd', (buffer) => zstdDecompress(buffer));
}
