/**
 * sink (MSK event source on `<p>.crawled_firehose`): every page as WARC and/or JSON lines under SINK_URI. Behaviour:
 * lib/sink/sink.ts; the event decoding and the partial batch response: ../shared/msk.ts. A partition whose output
 * could not be written is reported failed from its first record, so Lambda retries it whole and it rewrites the same
 * objects (docs/outputs.md "Idempotence").
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { MSKEvent } from 'aws-lambda';
import { config } from '../../lib/config/index.ts';
import { type SinkOptions, sinkBatch } from '../../lib/sink/sink.ts';
import { once } from '../shared/deps.ts';
import { batchResult, decodeMskEvent, type MskBatchResponse } from '../shared/msk.ts';
import { createLogger, createMetrics, monitorLog } from '../shared/observability.ts';
import { createSinkDeps } from './deps.ts';

const logger = createLogger('sink', config().LOG_LEVEL);
const metrics = createMetrics('sink');

/** Builds the handler around its options (Lambda: from the configuration, once; local runtime and tests: their own). */
export function sinkHandler(options: () => Promise<SinkOptions>) {
  return middy(async (event: MSKEvent): Promise<MskBatchResponse> => {
    const result = await sinkBatch(decodeMskEvent(event), await options());
    metrics.addMetric('PagesArchived', MetricUnit.Count, result.pages);
    metrics.addMetric('RecordsSkipped', MetricUnit.Count, result.skipped);
    metrics.addMetric('WarcBytes', MetricUnit.Bytes, result.bytes.warc);
    metrics.addMetric('JsonlBytes', MetricUnit.Bytes, result.bytes.jsonl);
    metrics.addMetric('RecordsFailed', MetricUnit.Count, result.failures.length);
    return batchResult(result.failures, config().MSK_EVENT_SOURCE_MODE);
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
}

export const handler = sinkHandler(once(async () => createSinkDeps(config(), monitorLog(logger)).options));
