/**
 * The benchmarks' Kafka: the local broker (localstack/services/kafka-service.ts), started when it is not running and
 * left up for the next run, as `services up` does.
 *
 * Bytes on the wire = bytes on disk: the broker keeps the producer's record batches as sent (compressed or not, topic
 * `compression.type=producer`), so the size of a topic's log segments in the broker's data dir is what its producers
 * sent, record batch headers included (`topicLogBytes`; used by the compression and crawl scenarios).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { config, type Variables } from '../../lib/config/index.ts';
import { layoutFrom } from '../../localstack/services/index.ts';
import { kafkaDataDir, kafkaUp } from '../../localstack/services/kafka-service.ts';
import type { ScenarioContext } from './scenario.ts';

export interface BenchKafka {
  /** This process's configuration with KAFKA_BROKERS pointing at the local broker. */
  vars: Variables;
  /** The broker's process (for its CPU), when known. */
  pid: number | undefined;
  /**
   * The broker's data dir (for `topicLogBytes`), when the broker is the one of this configuration's services dir
   * (CRAWL_SERVICES_DIR); undefined for a broker started elsewhere, whose files we cannot know.
   */
  dataDir: string | undefined;
}

/** Brings the local broker up (when it is not) and returns the variables that reach it, its pid and data dir. */
export async function benchKafka(ctx: Pick<ScenarioContext, 'progress'>): Promise<BenchKafka> {
  const base = config();
  const layout = layoutFrom(base);
  const status = await kafkaUp(layout, ctx.progress);
  return {
    vars: { ...base, KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}` },
    pid: status.pid,
    dataDir: status.state === 'running' ? kafkaDataDir(layout) : undefined,
  };
}

/**
 * Bytes of the log segments (`*.log`) of every partition of `topic` in the broker's data dir: NaN without a data dir
 * or when the topic has no partition there. A log segment grows as the broker appends (page cache, not fsync), so the
 * size counts every batch the broker has acked.
 */
export function topicLogBytes(dataDir: string | undefined, topic: string): number {
  if (dataDir === undefined) return Number.NaN;
  const partition = new RegExp(`^${topic.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d+$`);
  let dirs: string[];
  try {
    dirs = readdirSync(dataDir).filter((d) => partition.test(d));
  } catch {
    return Number.NaN;
  }
  if (dirs.length === 0) return Number.NaN;
  let sum = 0;
  for (const d of dirs) {
    try {
      for (const f of readdirSync(join(dataDir, d))) if (f.endsWith('.log')) sum += statSync(join(dataDir, d, f)).size;
    } catch {
      // A partition dir renamed for deletion (`<topic>-<n>.<id>-delete`) under our feet: no longer the topic's.
    }
  }
  return sum;
}
