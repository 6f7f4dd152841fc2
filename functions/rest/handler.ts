/**
 * rest (API Gateway HTTP API, payload format 2.0, `$default` route): Scrapy Cluster's REST API.
 * Behaviour: lib/rest/router.ts; the event and result translation: ./http-api.ts.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { config } from '../../lib/config/index.ts';
import type { RestContext } from '../../lib/rest/context.ts';
import { createRestRouter, type RestRouter } from '../../lib/rest/router.ts';
import { once } from '../shared/deps.ts';
import { createLogger, createMetrics, monitorLog } from '../shared/observability.ts';
import { openRestDeps } from './deps.ts';
import { decodeHttpApiEvent, type HttpApiEvent, type HttpApiResult, toHttpApiResult } from './http-api.ts';

const logger = createLogger('rest', config().LOG_LEVEL);
const metrics = createMetrics('rest');

/** Builds the handler around a context provider (Lambda: module-scope connections; tests: fakes). */
export function restHandler(context: () => Promise<RestContext>) {
  // One router per context: it keeps the time of the last heartbeat.
  const router = once(async (): Promise<RestRouter> => createRestRouter(await context()));
  return middy(async (event: HttpApiEvent): Promise<HttpApiResult> => {
    const response = await (await router())(decodeHttpApiEvent(event));
    metrics.addMetric('Requests', MetricUnit.Count, 1);
    metrics.addMetric(`Responses${Math.floor(response.status / 100)}xx`, MetricUnit.Count, 1);
    return toHttpApiResult(response);
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
}

// Connections are created once per container (on first use) and reused.
export const handler = restHandler(
  once(async () => {
    const vars = config();
    const options = { waitForResponseMs: vars.WAIT_FOR_RESPONSE_TIME * 1000 };
    return (await openRestDeps('rest', monitorLog(logger), vars, options)).ctx;
  }),
);
