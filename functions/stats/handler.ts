/**
 * stats (EventBridge, every minute): backlog per spider type, live crawlers, and what the crawler tasks sustain
 * (lib/monitor/fleet-metrics.ts) as CloudWatch metrics (Embedded Metric Format); the fleet autoscales on
 * `TasksNeeded` against `LiveTasks` (cdk/constructs/fleet.ts).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { ScheduledEvent } from 'aws-lambda';
import { config } from '../../lib/config/index.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { createMonitorDeps, once } from '../shared/deps.ts';
import { createLogger, createMetrics, monitorLog } from '../shared/observability.ts';

const logger = createLogger('stats', config().LOG_LEVEL);
const metrics = createMetrics('stats');

export function statsHandler(context: () => Promise<MonitorContext>) {
  return middy(async (_event: ScheduledEvent) => {
    const m = await fleetMetrics(await context());
    metrics.addMetric('Backlog', MetricUnit.Count, m.totalBacklog);
    metrics.addMetric('LiveCrawlers', MetricUnit.Count, m.liveCrawlers);
    metrics.addMetric('BacklogPerTask', MetricUnit.Count, m.backlogPerTask);
    metrics.addMetric('UrlFrontierBacklog', MetricUnit.Count, m.urlFrontierBacklog);
    metrics.addMetric('LiveTasks', MetricUnit.Count, m.liveTasks);
    metrics.addMetric('PagesPerSecond', MetricUnit.CountPerSecond, m.pagesPerSecond);
    metrics.addMetric('TaskPagesPerSecond', MetricUnit.CountPerSecond, m.taskPagesPerSecond);
    metrics.addMetric('SlotUtilization', MetricUnit.NoUnit, m.slotUtilization);
    metrics.addMetric('SaturatedShare', MetricUnit.NoUnit, m.saturatedShare);
    metrics.addMetric('TasksNeeded', MetricUnit.Count, m.tasksNeeded);
    for (const [spider, backlog] of Object.entries(m.backlog)) {
      const single = metrics.singleMetric();
      single.addDimension('spider', spider);
      single.addMetric('SpiderBacklog', MetricUnit.Count, backlog);
    }
    return m;
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
}

export const handler = statsHandler(
  once(async () => (await createMonitorDeps('stats', monitorLog(logger), config(), { kafka: false })).ctx),
);
