/**
 * `GET /`: Scrapy Cluster's health report. Both services are probed for every call (bounded), so the answer
 * says whether they answer now, not whether they did at start. Calls that arrive while a probe is running
 * share its result instead of starting probes of their own ({@link createHealthCheck}), so a crowd of health
 * checks costs one probe per service at a time.
 */
import type { SlotLoss } from '../ports.ts';
import type { ResolvedRestOptions, RestContext } from './context.ts';
import { failure, jsonResponse, type RestResponse } from './envelope.ts';
import { withTimeout } from './timeout.ts';

/**
 * GREEN: Kafka and Redis answer; YELLOW: one of them; RED: neither, or frontier state was lost and no operator has
 * acknowledged it yet (docs/design.md §12).
 */
type NodeHealth = 'GREEN' | 'YELLOW' | 'RED';

/** A loss of frontier state as the health report shows it. */
interface ReportedLoss {
  /** The hash tag that was emptied. */
  tag: string;
  /** When it was detected (epoch s). */
  lost_at: number;
  reason: string;
}

/** Scrapy Cluster's index fields. */
export interface HealthReport {
  kafka_connected: boolean;
  redis_connected: boolean;
  /** Whole seconds since this node started. */
  uptime_sec: number;
  /** This node's id (host:pid form of the heartbeats). */
  my_id: string;
  node_health: NodeHealth;
  /** Why `node_health` is not GREEN, for a person (Ext); absent when it is GREEN. */
  reason?: string;
  /**
   * Frontier state lost and not acknowledged (Ext), oldest first; absent when there is none. Acknowledge with
   * `crawl-cluster ack-lost` or `POST /ack-lost`.
   */
  state_lost?: ReportedLoss[];
}

/** RED while frontier state loss is unacknowledged; else GREEN when both are connected, YELLOW when one is, RED when neither is. */
function nodeHealth(kafka: boolean, redis: boolean, stateLost = false): NodeHealth {
  if (stateLost) return 'RED';
  if (kafka && redis) return 'GREEN';
  return kafka || redis ? 'YELLOW' : 'RED';
}

/** Why the health is what it is, for a person; undefined when all is well. */
function healthReason(kafka: boolean, redis: boolean, lost: readonly SlotLoss[]): string | undefined {
  const parts: string[] = [];
  if (lost.length > 0) {
    parts.push(`frontier state lost (not acknowledged): ${lost.map((l) => l.reason).join(' | ')}`);
  }
  if (!kafka) parts.push('Kafka does not answer');
  if (!redis) parts.push('Redis does not answer');
  return parts.length === 0 ? undefined : parts.join('; ');
}

/** The open losses of the record, or none when it cannot be read (Redis down is reported on its own). */
async function openLosses(ctx: RestContext, ms: number): Promise<SlotLoss[]> {
  if (!ctx.lostState) return [];
  try {
    return (await withTimeout(ctx.lostState.record(), ms, 'Redis (state)'))?.open ?? [];
  } catch {
    return [];
  }
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
 * One bounded call at a time: a call while one runs gets that call's result. The shared result settles within
 * `ms` even when the call never does, so a hung probe holds nobody longer than it would alone.
 */
function shared<T>(call: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () => {
    running ??= call().finally(() => {
      running = undefined;
    });
    return running;
  };
}

/**
 * The health check of one router: probes both services and reads the state-loss record in parallel, each bounded
 * by `probeTimeoutMs` and shared by the calls that arrive while it runs. Reads `ctx.health` at each probe, so a
 * context's probes may be swapped.
 */
export function createHealthCheck(
  ctx: RestContext,
  options: ResolvedRestOptions,
  startedAt: number,
): () => Promise<HealthReport> {
  const ms = options.probeTimeoutMs;
  const kafkaProbe = shared(() => answers(() => ctx.health.kafka(), ms, 'Kafka'));
  const redisProbe = shared(() => answers(() => ctx.health.redis(), ms, 'Redis'));
  const lossRead = shared(() => openLosses(ctx, ms));
  return async () => {
    const [kafka, redis, lost] = await Promise.all([kafkaProbe(), redisProbe(), lossRead()]);
    return report(ctx, startedAt, kafka, redis, lost);
  };
}

function report(ctx: RestContext, startedAt: number, kafka: boolean, redis: boolean, lost: SlotLoss[]): HealthReport {
  const out: HealthReport = {
    kafka_connected: kafka,
    redis_connected: redis,
    uptime_sec: Math.max(0, Math.floor((ctx.now() - startedAt) / 1000)),
    my_id: ctx.nodeId,
    node_health: nodeHealth(kafka, redis, lost.length > 0),
  };
  const reason = healthReason(kafka, redis, lost);
  if (reason !== undefined) out.reason = reason;
  if (lost.length > 0) {
    out.state_lost = lost.map((l) => ({ tag: l.tag, lost_at: Math.floor(l.at / 1000), reason: l.reason }));
  }
  return out;
}

/**
 * `POST /ack-lost`: an operator acknowledges every frontier state loss noted so far (docs/design.md §12); health is
 * GREEN again unless another loss comes. 200 with what was acknowledged (`acknowledged`: how many losses); 503 when
 * this API has no state store.
 */
export async function ackLost(ctx: RestContext): Promise<RestResponse> {
  if (!ctx.lostState) return failure(503, { message: 'This REST node does not read the frontier state record' });
  const record = await ctx.lostState.ack(ctx.now());
  const losses = record?.losses ?? [];
  return jsonResponse(200, {
    status: 'SUCCESS',
    data: {
      acknowledged: losses.length,
      losses: losses.map((l) => ({ tag: l.tag, lost_at: Math.floor(l.at / 1000), reason: l.reason })),
    },
    error: null,
  });
}

/**
 * The index answer, always 200 (the report says what is wrong). Scrapy Cluster's fields stay at the top
 * level, unwrapped, so its clients and health checks read them unchanged; the envelope keys are added
 * (Ext) with the same report as `data`, so a client of the other endpoints reads it the same way.
 */
export function healthResponse(report: HealthReport): RestResponse {
  return jsonResponse(200, { ...report, status: 'SUCCESS', data: report, error: null });
}
