/**
 * kafkajs compression codecs for the compression scenario. kafkajs has gzip built in; lz4 and zstd need a
 * codec registered in `CompressionCodecs`:
 *
 * - lz4: the `kafkajs-lz4` package (over the native `lz4` package), loaded from the project's dependencies,
 *   else from `BENCH_CODECS_DIR` or `bench/.codecs` (git-ignored: `npm install --prefix bench/.codecs
 *   kafkajs-lz4@1.2.1`, then `npm rebuild lz4` there, as npm no longer runs install scripts unasked);
 *   skipped when neither loads.
 * - zstd: lib/kafka/codecs.ts's codec over Node's built-in `zlib.zstdCompress` / `zstdDecompress` (Node ≥ 22.15; a
 *   Kafka zstd record batch is one standard zstd frame), the one `KAFKA_COMPRESSION=zstd` uses. The registry's
 *   codec, `@kafkajs/zstd` 0.1.1, needs the native `cppzst` 2.0.6, whose build fails against Node 24's headers.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  CompressionCodecs,
  type CompressionType,
  CompressionTypes,
  type KafkaCodec,
  zstdCodec,
} from '../../lib/kafka/codecs.ts';
import { BENCH_DIR } from './results.ts';

export type CodecName = 'none' | 'gzip' | 'lz4' | 'zstd';

export interface CodecInfo {
  name: CodecName;
  /** Where the codec comes from (for the results file). */
  source: string;
}

export function compressionOf(name: CodecName): CompressionType {
  if (name === 'gzip') return CompressionTypes.GZIP;
  if (name === 'lz4') return CompressionTypes.LZ4;
  if (name === 'zstd') return CompressionTypes.ZSTD;
  return CompressionTypes.None;
}

/** The installed version of a package next to the module `req` resolved. */
function versionOf(req: NodeJS.Require, name: string): string {
  try {
    return (req(`${name}/package.json`) as { version: string }).version;
  } catch {
    return '?';
  }
}

function loadLz4(): { codec: () => KafkaCodec; source: string } | undefined {
  const places = [
    import.meta.url,
    ...(process.env.BENCH_CODECS_DIR ? [join(process.env.BENCH_CODECS_DIR, 'package.json')] : []),
    join(BENCH_DIR, '.codecs', 'package.json'),
  ];
  for (const place of places) {
    if (!place.startsWith('file:') && !existsSync(place)) continue;
    const req = createRequire(place);
    try {
      const LZ4Codec = req('kafkajs-lz4') as new () => { codec: () => KafkaCodec };
      const codec = new LZ4Codec().codec;
      return {
        codec,
        source: `kafkajs-lz4 ${versionOf(req, 'kafkajs-lz4')} (lz4 ${versionOf(req, 'lz4')}) from ${place.startsWith('file:') ? 'node_modules' : place.replace(/\/package\.json$/, '')}`,
      };
    } catch {}
  }
  return undefined;
}

/** Registers lz4 (when it loads) and zstd with kafkajs; returns the codecs to measure. */
export async function registerCodecs(progress: (message: string) => void): Promise<CodecInfo[]> {
  const out: CodecInfo[] = [
    { name: 'none', source: 'kafkajs' },
    { name: 'gzip', source: 'kafkajs built-in (zlib.gzip, default level 6)' },
  ];
  const codecs = CompressionCodecs as unknown as Record<number, () => KafkaCodec>;
  const lz4 = loadLz4();
  if (lz4) {
    codecs[CompressionTypes.LZ4] = lz4.codec;
    out.push({ name: 'lz4', source: lz4.source });
  } else progress('lz4: kafkajs-lz4 not found (see bench/lib/codecs.ts); skipped');
  codecs[CompressionTypes.ZSTD] = zstdCodec;
  out.push({ name: 'zstd', source: `lib/kafka/codecs.ts over node:zlib zstd (Node ${process.version}, level 3)` });
  return out;
}
