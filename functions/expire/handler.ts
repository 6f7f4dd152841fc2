/**
 * expire (EventBridge, every minute): crawls whose `expires` passed are stopped with an `expired` notice.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddyHandlerObject } from '@middy/core';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { config } from '../../lib/config/index.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { expireCrawls } from '../../lib/monitor/expire-crawls.ts';
import { createMonitorDeps, once } from '../shared/deps.ts';
import { createLogger, createMetrics, monitorLog } from '../shared/observability.ts';

const logger = createLogger('expire', config().LOG_LEVEL);
const metrics = createMetrics('expire');

export function expireHandler(context: () => Promise<MonitorContext>) {
  // middy aborts `signal` just before the function times out: the run stops then instead of going on in the
  // background (a frozen Lambda would resume it in its next invocation, next to that invocation's own run).
  return middy(async (_event: ScheduledEvent, _lambda: Context, { signal }: MiddyHandlerObject) => {
    const { expired, swept } = await expireCrawls(await context(), { signal });
    metrics.addMetric('CrawlsExpired', MetricUnit.Count, expired);
    metrics.addMetric('CrawlsSwept', MetricUnit.Count, swept);
    return { expired, swept };
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
}

export const handler = expireHandler(once(async () => (await createMonitorDeps('expire', monitorLog(logger))).ctx));
