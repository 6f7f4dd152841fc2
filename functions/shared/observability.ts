/**
 * Powertools logger and metrics for every function, plus the adapter that lets `lib/` log through the
 * logger without knowing about Powertools (docs/style.md §3).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Log } from '../../lib/ports.ts';

/** CloudWatch namespace of every metric the project emits; the CDK dashboard and alarms use it. */
export const METRICS_NAMESPACE = 'CrawlCluster';

export function createLogger(serviceName: string, logLevel = 'INFO'): Logger {
  return new Logger({ serviceName, logLevel: logLevel as 'INFO' });
}

export function createMetrics(serviceName: string): Metrics {
  return new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
}

/** `lib/`'s structured log, backed by a Powertools logger. */
export function monitorLog(logger: Logger): Log {
  return {
    info: (message, fields) => logger.info(message, fields ?? {}),
    warn: (message, fields) => logger.warn(message, fields ?? {}),
    error: (message, fields) => logger.error(message, fields ?? {}),
  };
}
