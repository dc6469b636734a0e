// Type declarations for the two compression libraries that ship none (see src/compression.ts).

declare module 'kafkajs-snappy' {
  /** The kafkajs codec factory for snappy (raw and xerial-framed). */
  const SnappyCodec: () => { compress(encoder: { buffer: Buffer }): Promise<Buffer>; decompress(buffer: Buffer): Promise<Buffer> };
  export default SnappyCodec;
}

declare module 'lz4js' {
  /** Decompresses one LZ4 frame. */
  export function decompress(src: Uint8Array, maxSize?: number): Uint8Array;
}
