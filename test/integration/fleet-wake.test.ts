/**
 * The fleet's wake record on the cluster-mode Redis (lib/monitor/fleet-wake.ts): a rejection for a name no crawler
 * registered is kept for its window and then ends by itself, and the stats run's fleet metrics (functions/shared/deps.ts
 * wiring, real Redis) size a fleet with nothing queued and no task to one while it stands.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { createMonitorDeps } from '../../functions/shared/deps.ts';
import { config } from '../../lib/config/index.ts';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { FLEET_WAKE_MS, redisFleetWake } from '../../lib/monitor/fleet-wake.ts';
import { silentLog } from '../../lib/ports.ts';
import { fleetWakeKey } from '../../lib/redis/keys.ts';
import { frontierTestRedis } from '../helpers/frontier.ts';
import { uniqueName } from '../helpers/services.ts';

const redis = frontierTestRedis();
const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await redis.del(fleetWakeKey(prefix));
});

const prefix = () => {
  const p = uniqueName('wake');
  prefixes.push(p);
  return p;
};

describe('the fleet wake record', () => {
  test('is kept for its window in Redis and then gone', async () => {
    const p = prefix();
    const wake = redisFleetWake(redis, p, 300);
    const now = Date.now();
    expect(await wake.wanted(now)).toBe(false);
    await wake.want(now);
    expect(await wake.wanted(now + 100)).toBe(true);
    const ttl = await redis.pttl(fleetWakeKey(p));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await redis.exists(fleetWakeKey(p))).toBe(0);
    expect(await wake.wanted(Date.now())).toBe(false);
  });

  test('sizes an idle fleet with no task to one while it stands (the stats function’s context)', async () => {
    const base = config();
    const p = prefix();
    const deps = await createMonitorDeps(
      'stats',
      silentLog,
      {
        ...base,
        KAFKA_BROKERS: '127.0.0.1:1',
        REDIS_HOST: '127.0.0.1',
        REDIS_PORT: base.CRAWL_REDIS_CLUSTER_PORT,
        REDIS_CLUSTER: true,
        REDIS_KEY_PREFIX: p,
      },
      { kafka: false },
    );
    try {
      expect(await fleetMetrics(deps.ctx)).toMatchObject({ totalBacklog: 0, liveTasks: 0, tasksNeeded: 0 });
      await deps.ctx.fleetWake?.want(Date.now());
      expect(await fleetMetrics(deps.ctx)).toMatchObject({ totalBacklog: 0, liveTasks: 0, tasksNeeded: 1 });
      expect(await redis.pttl(fleetWakeKey(p))).toBeGreaterThan(FLEET_WAKE_MS - 60_000);
    } finally {
      await deps.close();
    }
  });
});
