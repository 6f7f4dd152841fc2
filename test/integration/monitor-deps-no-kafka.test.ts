/**
 * Stats and reclaim need Redis only (functions/shared/deps.ts, `kafka: false`): with Kafka unreachable their
 * context still opens at once and works against the real Redis, and sending through it fails with a clear error.
 */
import { describe, expect, it } from 'vitest';
import { createMonitorDeps } from '../../functions/shared/deps.ts';
import { config } from '../../lib/config/index.ts';
import { CRAWLER_TASK_KIND, LoadWindow } from '../../lib/crawl/crawler/load-report.ts';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { reclaimLeases } from '../../lib/monitor/reclaim-leases.ts';
import { silentLog } from '../../lib/ports.ts';
import { seed } from '../helpers/fake-frontier.ts';
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
      // A crawler process's heartbeat with its load report, as lib/crawl/crawler/crawler.ts beats it, reaches the metrics.
      const now = Date.now();
      const window = new LoadWindow();
      window.begin(now - 20_000);
      for (let i = 1; i <= 40; i++) {
        window.sample(now - 20_000 + i * 500, { inUse: 64, limit: 64, bound: 'cpu', load: 0.95 }, i * 150);
      }
      const report = JSON.stringify(window.report(now, 6000, 64));
      await deps.ctx.stats.beat(CRAWLER_TASK_KIND, 'host-a:1', now, 300_000, report);
      await deps.ctx.frontier.enqueue('link', [seed({ appid: 'a', crawlid: 'c', url: 'http://example.com/' })]);
      expect(await fleetMetrics(deps.ctx)).toMatchObject({
        totalBacklog: 1,
        liveTasks: 1,
        pagesPerSecond: 300,
        slotUtilization: 1,
        saturatedShare: 1,
        taskPagesPerSecond: 300,
        tasksNeeded: 1,
      });
      expect(await reclaimLeases(deps.ctx)).toBe(0);
      await expect(deps.ctx.sink.send([{ topic: 't', messages: [{ value: 'x' }] }])).rejects.toThrow(
        /stats has no Kafka producer/,
      );
    } finally {
      await deps.close();
    }
  });
});
