/**
 * `GET /`: Scrapy Cluster's health report. Both services are probed for every call (bounded), so the answer
 * says whether they answer now, not whether they did at start. Calls that arrive while a probe is running
 * share its result instead of starting probes of their own ({@link createHealthCheck}), so a crowd of health
 * checks costs one probe per service at a time.
 */
import type { ResolvedRestOptions, RestContext } from './context.ts';
import { jsonResponse, type RestResponse } from './envelope.ts';
import { withTimeout } from './timeout.ts';

/** GREEN: Kafka and Redis answer; YELLOW: one of them; RED: neither. */
export type NodeHealth = 'GREEN' | 'YELLOW' | 'RED';

/** Scrapy Cluster's index fields. */
export interface HealthReport {
  kafka_connected: boolean;
  redis_connected: boolean;
  /** Whole seconds since this node started. */
  uptime_sec: number;
  /** This node's id (host:pid form of the heartbeats). */
  my_id: string;
  node_health: NodeHealth;
}

/** GREEN when both are connected, YELLOW when one is, RED when neither is. */
export function nodeHealth(kafka: boolean, redis: boolean): NodeHealth {
  if (kafka && redis) return 'GREEN';
  return kafka || redis ? 'YELLOW' : 'RED';
}

async function answers(probe: () => Promise<void>, ms: number, what: string): Promise<boolean> {
  try {
    await withTimeout(probe(), ms, what);
    return true;
  } catch {
    return false;
  }
}

/**
 * One bounded probe at a time: a call while one runs gets that probe's result. The shared result settles within
 * `ms` even when the probe never does, so a hung probe holds nobody longer than it would alone.
 */
function shared(probe: () => Promise<void>, ms: number, what: string): () => Promise<boolean> {
  let running: Promise<boolean> | undefined;
  return () => {
    running ??= answers(probe, ms, what).finally(() => {
      running = undefined;
    });
    return running;
  };
}

/**
 * The health check of one router: probes both services in parallel, each bounded by `probeTimeoutMs` and shared
 * by the calls that arrive while it runs. Reads `ctx.health` at each probe, so a context's probes may be swapped.
 */
export function createHealthCheck(
  ctx: RestContext,
  options: ResolvedRestOptions,
  startedAt: number,
): () => Promise<HealthReport> {
  const kafkaProbe = shared(() => ctx.health.kafka(), options.probeTimeoutMs, 'Kafka');
  const redisProbe = shared(() => ctx.health.redis(), options.probeTimeoutMs, 'Redis');
  return async () => {
    const [kafka, redis] = await Promise.all([kafkaProbe(), redisProbe()]);
    return report(ctx, startedAt, kafka, redis);
  };
}

function report(ctx: RestContext, startedAt: number, kafka: boolean, redis: boolean): HealthReport {
  return {
    kafka_connected: kafka,
    redis_connected: redis,
    uptime_sec: Math.max(0, Math.floor((ctx.now() - startedAt) / 1000)),
    my_id: ctx.nodeId,
    node_health: nodeHealth(kafka, redis),
  };
}

/**
 * The index answer, always 200 (the report says what is wrong). Scrapy Cluster's fields stay at the top
 * level, unwrapped, so its clients and health checks read them unchanged; the envelope keys are added
 * (Ext) with the same report as `data`, so a client of the other endpoints reads it the same way.
 */
export function healthResponse(report: HealthReport): RestResponse {
  return jsonResponse(200, { ...report, status: 'SUCCESS', data: report, error: null });
}
