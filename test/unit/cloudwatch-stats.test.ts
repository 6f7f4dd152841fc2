/**
 * The local runtime sends the stats metrics to CloudWatch itself (localstack/runtime/cloudwatch-stats.ts), while on
 * AWS the stats handler prints them as EMF. Both must give CloudWatch the same metrics, under the names and
 * dimensions the autoscaling policy reads: the handler's EMF documents are read here and compared.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';

// Before the handler module loads: Powertools reads these when it builds its Metrics. POWERTOOLS_DEV makes it print
// through the global console, where the test reads the EMF documents.
const savedEnv = vi.hoisted(() => {
  const saved = {
    LOG_LEVEL: process.env.LOG_LEVEL,
    POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED,
    POWERTOOLS_DEV: process.env.POWERTOOLS_DEV,
  };
  process.env.LOG_LEVEL = 'SILENT';
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  process.env.POWERTOOLS_DEV = 'true';
  return saved;
});

import type { MetricDatum, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import type { ScheduledEvent } from 'aws-lambda';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { statsHandler } from '../../functions/stats/handler.ts';
import type { FleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { cloudWatchStatsPublisher, statsMetricData } from '../../localstack/runtime/cloudwatch-stats.ts';
import { lambdaContext, loadEvent } from '../helpers/events.ts';
import { child, seed } from '../helpers/fake-frontier.ts';
import { TEST_NOW, testContext } from '../helpers/fakes.ts';

afterAll(() => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** One metric value as CloudWatch stores it: `namespace name{dim=value,...} = value unit`. */
type Point = string;

function point(namespace: string, name: string, dims: Record<string, string>, value: number, unit: string): Point {
  const d = Object.entries(dims)
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(',');
  return `${namespace} ${name}{${d}} = ${value} ${unit}`;
}

interface Emf {
  _aws: {
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  [field: string]: unknown;
}

/** The metric values an EMF document gives CloudWatch. */
function pointsOfEmf(doc: Emf): Point[] {
  return doc._aws.CloudWatchMetrics.flatMap((directive) =>
    directive.Dimensions.flatMap((dimensionSet) =>
      directive.Metrics.map((metric) =>
        point(
          directive.Namespace,
          metric.Name,
          Object.fromEntries(dimensionSet.map((name) => [name, String(doc[name])])),
          doc[metric.Name] as number,
          metric.Unit,
        ),
      ),
    ),
  );
}

function pointsOfData(namespace: string, data: MetricDatum[]): Point[] {
  return data.map((d) =>
    point(
      namespace,
      d.MetricName as string,
      Object.fromEntries((d.Dimensions ?? []).map((x) => [x.Name as string, x.Value as string])),
      d.Value as number,
      d.Unit as string,
    ),
  );
}

/** The fleet's load with no task reporting (lib/monitor/fleet-sizing.ts). */
const NO_TASKS = {
  liveTasks: 0,
  pagesPerSecond: 0,
  slotUtilization: 0,
  saturatedShare: 0,
  taskPagesPerSecond: 0,
  tasksNeeded: 0,
};

describe('stats metrics for CloudWatch', () => {
  it('are the metrics the stats handler emits as EMF: same namespace, names, dimensions, values and units', async () => {
    const ctx = testContext();
    const c = { appid: 'testapp', crawlid: 'c1' };
    await ctx.frontier.enqueue(
      'link',
      [seed({ ...c, url: 'http://example.com/', maxdepth: 1 }), child(c, 'http://example.com/a', -9)],
      TEST_NOW,
    );
    await ctx.frontier.enqueue('wandering', [seed({ ...c, crawlid: 'c2', url: 'http://example.org/' })], TEST_NOW);
    await ctx.stats.beat('crawler', 'link|host-a|1', TEST_NOW - 1000, 300_000);
    const load = { at: TEST_NOW - 1000, pagesPerSec: 310.5, slotsInUse: 120, slotLimit: 160, bound: 'cpu' };
    await ctx.stats.beat(
      'crawler-task',
      'host-a|1',
      TEST_NOW - 1000,
      300_000,
      JSON.stringify({ ...load, saturated: 0.75, load: 0.9 }),
    );

    const printed: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
      printed.push(String(line));
    });
    let m: FleetMetrics;
    try {
      m = (await statsHandler(() => Promise.resolve(ctx))(
        loadEvent<ScheduledEvent>('scheduled'),
        lambdaContext('stats'),
      )) as FleetMetrics;
    } finally {
      spy.mockRestore();
    }
    const emf = printed
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Emf)
      .filter((doc) => doc._aws !== undefined);
    expect(emf.length).toBeGreaterThan(0);
    expect(m.backlog).toEqual({ link: 2, wandering: 1 });
    expect(m).toMatchObject({ liveTasks: 1, pagesPerSecond: 310.5, slotUtilization: 0.75, tasksNeeded: 1 });

    expect(pointsOfData(METRICS_NAMESPACE, statsMetricData(m)).sort()).toEqual(emf.flatMap(pointsOfEmf).sort());
  });

  it('carry the dimension service=stats that the autoscaling policy reads, and spider on SpiderBacklog', () => {
    const m: FleetMetrics = {
      ...NO_TASKS,
      backlog: { link: 4 },
      totalBacklog: 4,
      liveCrawlers: 0,
      backlogPerTask: 4,
      urlFrontierBacklog: 0,
      tasksNeeded: 1,
    };
    expect(pointsOfData(METRICS_NAMESPACE, statsMetricData(m))).toEqual([
      'CrawlCluster Backlog{service=stats} = 4 Count',
      'CrawlCluster LiveCrawlers{service=stats} = 0 Count',
      'CrawlCluster BacklogPerTask{service=stats} = 4 Count',
      'CrawlCluster UrlFrontierBacklog{service=stats} = 0 Count',
      'CrawlCluster LiveTasks{service=stats} = 0 Count',
      'CrawlCluster PagesPerSecond{service=stats} = 0 Count/Second',
      'CrawlCluster TaskPagesPerSecond{service=stats} = 0 Count/Second',
      'CrawlCluster SlotUtilization{service=stats} = 0 None',
      'CrawlCluster SaturatedShare{service=stats} = 0 None',
      'CrawlCluster TasksNeeded{service=stats} = 1 Count',
      'CrawlCluster SpiderBacklog{service=stats,spider=link} = 4 Count',
    ]);
  });

  it('are the metrics the fleet scales on and the dashboard graphs, as cdk/constructs/fleet.ts reads them', async () => {
    const { statsMetric, STATS_METRICS } = await import('../../cdk/constructs/fleet.ts');
    const data = statsMetricData({
      ...NO_TASKS,
      backlog: {},
      totalBacklog: 1,
      liveCrawlers: 1,
      backlogPerTask: 1,
      urlFrontierBacklog: 1,
    });
    expect(data.map((d) => d.MetricName)).toEqual(STATS_METRICS);
    for (const name of STATS_METRICS) {
      const read = statsMetric(name);
      const sent = data.find((d) => d.MetricName === name);
      expect(read.namespace, name).toBe(METRICS_NAMESPACE);
      expect(Object.fromEntries((sent?.Dimensions ?? []).map((d) => [d.Name, d.Value])), name).toEqual(read.dimensions);
    }
  });

  it('go out in PutMetricData calls of at most 1000 data, under the publisher namespace', async () => {
    const sent: PutMetricDataCommand[] = [];
    const publisher = cloudWatchStatsPublisher({ send: async (command) => void sent.push(command) }, 'TestNs');
    const backlog = Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`spider${i}`, i]));
    await publisher.publish({
      ...NO_TASKS,
      backlog,
      totalBacklog: 1,
      liveCrawlers: 1,
      backlogPerTask: 1,
      urlFrontierBacklog: 0,
    });
    expect(sent.map((c) => [c.input.Namespace, c.input.MetricData?.length])).toEqual([
      ['TestNs', 1000],
      ['TestNs', 510],
    ]);
  });
});
