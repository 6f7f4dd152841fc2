/**
 * The benchmarks' Kafka: the local broker (localstack/services/kafka-service.ts), started when it is not running and
 * left up for the next run, as `services up` does.
 */
import { config, type Variables } from '../../lib/config/index.ts';
import { layoutFrom } from '../../localstack/services/index.ts';
import { kafkaUp } from '../../localstack/services/kafka-service.ts';
import type { ScenarioContext } from './scenario.ts';

export interface BenchKafka {
  /** This process's configuration with KAFKA_BROKERS pointing at the local broker. */
  vars: Variables;
  /** The broker's process (for its CPU), when known. */
  pid: number | undefined;
}

/** Brings the local broker up (when it is not) and returns the variables that reach it and its pid. */
export async function benchKafka(ctx: Pick<ScenarioContext, 'progress'>): Promise<BenchKafka> {
  const base = config();
  const status = await kafkaUp(layoutFrom(base), ctx.progress);
  return { vars: { ...base, KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}` }, pid: status.pid };
}
