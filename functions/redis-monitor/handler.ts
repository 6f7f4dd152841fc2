/**
 * redis-monitor (MSK event source on `<p>.actions`): info, stop, stats, domain config. Behaviour:
 * lib/monitor/redis-monitor.ts; the event decoding and the partial batch response: ../shared/msk.ts.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { MSKEvent } from 'aws-lambda';
import { config } from '../../lib/config/index.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { handleActions } from '../../lib/monitor/redis-monitor.ts';
import { createMonitorDeps, once } from '../shared/deps.ts';
import { batchResult, decodeMskEvent, type MskBatchResponse } from '../shared/msk.ts';
import { createLogger, createMetrics, monitorLog } from '../shared/observability.ts';

const logger = createLogger('redis-monitor', config().LOG_LEVEL);
const metrics = createMetrics('redis-monitor');

export function redisMonitorHandler(context: () => Promise<MonitorContext>) {
  return middy(async (event: MSKEvent): Promise<MskBatchResponse> => {
    const result = await handleActions(await context(), decodeMskEvent(event));
    metrics.addMetric('Replies', MetricUnit.Count, result.replies.length);
    metrics.addMetric('RecordsFailed', MetricUnit.Count, result.failures.length);
    return batchResult(result.failures, config().MSK_EVENT_SOURCE_MODE);
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
}

export const handler = redisMonitorHandler(
  once(async () => (await createMonitorDeps('redis-monitor', monitorLog(logger))).ctx),
);
