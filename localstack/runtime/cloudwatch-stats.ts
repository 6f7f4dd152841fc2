/**
 * The stats function's metrics in CloudWatch, for the local runtime. On AWS the handler (functions/stats/handler.ts)
 * prints them as Embedded Metric Format and CloudWatch Logs turns that into metrics; locally nothing reads stdout,
 * so the local schedule sends the same metrics with PutMetricData to LocalStack: the same namespace, metric names
 * and dimensions, which are the ones the fleet's autoscaling reads (cdk/constructs/fleet.ts `statsMetric`).
 * test/unit/cloudwatch-stats.test.ts holds {@link statsMetricData} to what the handler emits.
 */
import { type MetricDatum, PutMetricDataCommand, StandardUnit } from '@aws-sdk/client-cloudwatch';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import type { FleetMetrics } from '../../lib/monitor/fleet-metrics.ts';

/** Powertools puts `service` (the function's serviceName) on every metric; the stats function's is `stats`. */
const SERVICE = { Name: 'service', Value: 'stats' } as const;

/** CloudWatch takes at most 1000 data per PutMetricData. */
const MAX_DATA_PER_CALL = 1000;

/** The metrics of one stats run, as the handler emits them. */
export function statsMetricData(m: FleetMetrics, timestamp = new Date()): MetricDatum[] {
  const datum = (
    name: string,
    value: number,
    spider?: string,
    unit: StandardUnit = StandardUnit.Count,
  ): MetricDatum => ({
    MetricName: name,
    Dimensions: spider === undefined ? [{ ...SERVICE }] : [{ ...SERVICE }, { Name: 'spider', Value: spider }],
    Value: value,
    Unit: unit,
    Timestamp: timestamp,
  });
  return [
    datum('Backlog', m.totalBacklog),
    datum('LiveCrawlers', m.liveCrawlers),
    datum('BacklogPerTask', m.backlogPerTask),
    datum('UrlFrontierBacklog', m.urlFrontierBacklog),
    datum('LiveTasks', m.liveTasks),
    datum('PagesPerSecond', m.pagesPerSecond, undefined, StandardUnit.Count_Second),
    datum('TaskPagesPerSecond', m.taskPagesPerSecond, undefined, StandardUnit.Count_Second),
    datum('SlotUtilization', m.slotUtilization, undefined, StandardUnit.None),
    datum('SaturatedShare', m.saturatedShare, undefined, StandardUnit.None),
    datum('TasksNeeded', m.tasksNeeded),
    ...Object.entries(m.backlog).map(([spider, backlog]) => datum('SpiderBacklog', backlog, spider)),
  ];
}

/** What the publisher needs of a CloudWatch client: `CloudWatchClient` has it. */
export interface CloudWatchSend {
  send(command: PutMetricDataCommand): Promise<unknown>;
}

export interface StatsPublisher {
  /** CloudWatch namespace the metrics go to. */
  namespace: string;
  publish(m: FleetMetrics): Promise<void>;
}

/** Sends each stats run's metrics to CloudWatch under `namespace` (tests use one of their own). */
export function cloudWatchStatsPublisher(client: CloudWatchSend, namespace = METRICS_NAMESPACE): StatsPublisher {
  return {
    namespace,
    async publish(m) {
      const data = statsMetricData(m);
      for (let i = 0; i < data.length; i += MAX_DATA_PER_CALL) {
        await client.send(
          new PutMetricDataCommand({ Namespace: namespace, MetricData: data.slice(i, i + MAX_DATA_PER_CALL) }),
        );
      }
    },
  };
}
