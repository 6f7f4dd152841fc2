/**
 * Stats and reclaim need Redis only (functions/shared/deps.ts, `kafka: false`): with Kafka unreachable their
 * context still opens at once and works against the real Redis, and sending through it fails with a clear error.
 */
import { describe, expect, it } from 'vitest';
import { createMonitorDeps } from '../../functions/shared/deps.ts';
import { config } from '../../lib/config/index.ts';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { reclaimLeases } from '../../lib/monitor/reclaim-leases.ts';
import { silentLog } from '../../lib/ports.ts';
import { uniqueName } from '../helpers/services.ts';

describe('monitor deps without Kafka', () => {
  it('opens with Kafka unreachable, answers from Redis, and refuses to send', async () => {
    const base = config();
    const vars = {
      ...base,
      // Nothing listens on port 1: a producer would fail to connect.
      KAFKA_BROKERS: '127.0.0.1:1',
      REDIS_HOST: '127.0.0.1',
      REDIS_PORT: base.CRAWL_REDIS_PORT,
      REDIS_CLUSTER: false,
      REDIS_KEY_PREFIX: uniqueName('nokafka'),
    };
    const started = Date.now();
    const deps = await createMonitorDeps('stats', silentLog, vars, { kafka: false });
    try {
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await fleetMetrics(deps.ctx)).toMatchObject({ totalBacklog: 0, liveCrawlers: 0, urlFrontierBacklog: 0 });
      expect(await reclaimLeases(deps.ctx)).toBe(0);
      await expect(deps.ctx.sink.send([{ topic: 't', messages: [{ value: 'x' }] }])).rejects.toThrow(
        /stats has no Kafka producer/,
      );
    } finally {
      await deps.close();
    }
  });
});
