/**
 * Compression of the page messages the crawlers produce (`KAFKA_COMPRESSION`). kafkajs has gzip built in; zstd is
 * registered here over Node's own zlib zstd (Node ≥ 22.15; a Kafka zstd record batch is one standard zstd frame),
 * so no native package is needed. Every kafkajs client of this code base loads lib/kafka/client.ts, which imports
 * this module, so its consumers (`crawl-cluster dump`, the tests) read zstd batches too.
 *
 * gzip runs at zlib's default level: on AWS the bytes cost more than the CPU a faster level would save (docs/cost.md;
 * the ratios the crawl bench measures are in bench/PROFILE.md). The default stays `none`, because Scrapy Cluster's
 * Python clients read zstd only with the `zstandard` package installed (gzip always works).
 */
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import kafkajs from 'kafkajs';

// CommonJS: Node's named-export detection does not see these two.
const { CompressionCodecs, CompressionTypes } = kafkajs;

/** kafkajs's codec registry and compression types, for the bench's codecs (bench/lib/codecs.ts): its one way in. */
export { CompressionCodecs, CompressionTypes };
/** One of kafkajs's compression types. */
export type CompressionType = kafkajs.CompressionTypes;

/** The values of `KAFKA_COMPRESSION`. */
export const KAFKA_COMPRESSIONS = ['none', 'gzip', 'zstd'] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];

/** kafkajs's compression type for a `KAFKA_COMPRESSION` value. */
export function compressionType(name: KafkaCompression): kafkajs.CompressionTypes {
  if (name === 'gzip') return CompressionTypes.GZIP;
  if (name === 'zstd') return CompressionTypes.ZSTD;
  return CompressionTypes.None;
}

/** A kafkajs codec: compresses an encoder's buffer, decompresses a record batch's records. */
export interface KafkaCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

const zstdCompress = promisify(zlib.zstdCompress);
const zstdDecompress = promisify(zlib.zstdDecompress);

/** zstd on Node's zlib, at zstd's default level (3). */
export const zstdCodec = (): KafkaCodec => ({
  compress: async (encoder) => zstdCompress(encoder.buffer),
  decompress: async (buffer) => zstdDecompress(buffer),
});

(CompressionCodecs as unknown as Record<number, () => KafkaCodec>)[CompressionTypes.ZSTD] = zstdCodec;
