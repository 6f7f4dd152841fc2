/**
 * kafka-monitor (MSK event source on `<p>.incoming`): parse, validate, route. Behaviour: lib/monitor/kafka-monitor.ts;
 * the event decoding and the partial batch response: ../shared/msk.ts.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { MSKEvent } from 'aws-lambda';
import { config } from '../../lib/config/index.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { handleIncoming } from '../../lib/monitor/kafka-monitor.ts';
import { createMonitorDeps, once } from '../shared/deps.ts';
import { batchResult, decodeMskEvent, type MskBatchResponse } from '../shared/msk.ts';
import { createLogger, createMetrics, monitorLog } from '../shared/observability.ts';

const logger = createLogger('kafka-monitor', config().LOG_LEVEL);
const metrics = createMetrics('kafka-monitor');

/** Builds the handler around a context provider (Lambda: module-scope connections; local runtime: its own). */
export function kafkaMonitorHandler(context: () => Promise<MonitorContext>) {
  return middy(async (event: MSKEvent): Promise<MskBatchResponse> => {
    const result = await handleIncoming(await context(), decodeMskEvent(event));
    metrics.addMetric('RequestsQueued', MetricUnit.Count, result.crawl.queued);
    metrics.addMetric('RequestsDuplicate', MetricUnit.Count, result.crawl.duplicate);
    metrics.addMetric('RequestsForwarded', MetricUnit.Count, result.forwarded);
    metrics.addMetric('RequestsRejected', MetricUnit.Count, result.rejected);
    metrics.addMetric('RecordsFailed', MetricUnit.Count, result.failures.length);
    return batchResult(result.failures, config().MSK_EVENT_SOURCE_MODE);
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
}

export const handler = kafkaMonitorHandler(
  once(async () => (await createMonitorDeps('kafka-monitor', monitorLog(logger))).ctx),
);
