/**
 * reclaim (EventBridge, every minute): requests leased by crawlers that died go back to their queues.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { ScheduledEvent } from 'aws-lambda';
import { config } from '../../lib/config/index.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { reclaimLeases } from '../../lib/monitor/reclaim-leases.ts';
import { createMonitorDeps, once } from '../shared/deps.ts';
import { createLogger, createMetrics, monitorLog } from '../shared/observability.ts';

const logger = createLogger('reclaim', config().LOG_LEVEL);
const metrics = createMetrics('reclaim');

export function reclaimHandler(context: () => Promise<MonitorContext>) {
  return middy(async (_event: ScheduledEvent) => {
    const reclaimed = await reclaimLeases(await context());
    metrics.addMetric('LeasesReclaimed', MetricUnit.Count, reclaimed);
    return { reclaimed };
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
}

export const handler = reclaimHandler(
  once(async () => (await createMonitorDeps('reclaim', monitorLog(logger), config(), { kafka: false })).ctx),
);
