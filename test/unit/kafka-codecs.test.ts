/** lib/kafka/codecs.ts: the KAFKA_COMPRESSION values, kafkajs's types for them, and the zstd codec's round trip. */
import kafkajs from 'kafkajs';
import { describe, expect, test } from 'vitest';
import { loadConfig } from '../../lib/config/index.ts';
import { compressionType, KAFKA_COMPRESSIONS, zstdCodec } from '../../lib/kafka/codecs.ts';

const { CompressionCodecs, CompressionTypes } = kafkajs;

describe('KAFKA_COMPRESSION', () => {
  test('every value maps to its kafkajs type; the configuration takes exactly these values, none by default', () => {
    expect(KAFKA_COMPRESSIONS.map(compressionType)).toEqual([
      CompressionTypes.None,
      CompressionTypes.GZIP,
      CompressionTypes.ZSTD,
    ]);
    expect(loadConfig({}).KAFKA_COMPRESSION).toBe('none');
    for (const v of KAFKA_COMPRESSIONS) expect(loadConfig({ KAFKA_COMPRESSION: v }).KAFKA_COMPRESSION).toBe(v);
    expect(() => loadConfig({ KAFKA_COMPRESSION: 'lz4' })).toThrow(/KAFKA_COMPRESSION/);
  });

  test('zstd is registered with kafkajs and round-trips a record batch body, smaller', async () => {
    expect((CompressionCodecs as unknown as Record<number, unknown>)[CompressionTypes.ZSTD]).toBe(zstdCodec);
    const body = Buffer.from('<p>the same paragraph</p>'.repeat(2000));
    const codec = zstdCodec();
    const packed = await codec.compress({ buffer: body });
    expect(packed.length).toBeLessThan(body.length / 20);
    expect((await codec.decompress(packed)).equals(body)).toBe(true);
  });
});
