/**
 * The CloudWatch dashboard (ingest, rejections, backlog, pages per minute, function errors and offset lag, fleet size
 * and what its tasks sustain, cache memory, REST API requests, errors and latency, and the URL Frontier service when
 * the stack has it; none with `dashboard=false`) and the alarms that page someone, through one SNS topic.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import type { Cache } from './cache.ts';
import { ALARM_METRICS_MAX, brokerDiskAlarms, sinkAlarm } from './data-alarms.ts';
import { type Fleet, statsMetric } from './fleet.ts';
import type { Functions } from './functions.ts';
import type { Kafka } from './kafka.ts';
import type { RestApi } from './rest-api.ts';
import type { Sink } from './sink.ts';
import { FAILED_BATCH_METRICS_ID, type Storage } from './storage.ts';
import { URL_FRONTIER_CPU_TARGET, type UrlFrontier } from './url-frontier.ts';

export interface ObservabilityProps {
  kafka: Kafka;
  cache: Cache;
  functions: Functions;
  fleet: Fleet;
  restApi: RestApi;
  /** Its failed-batch bucket gets an alarm. */
  storage: Storage;
  /** The URL Frontier service, when the stack has one: its row of the dashboard and its alarms. */
  urlFrontier?: UrlFrontier;
  /** The archive sink, when the stack has one: its alarm. */
  sink?: Sink;
  alarmEmail?: string;
  /**
   * Whether the ECS cluster has Container Insights (its RunningTaskCount). Without it the fleet graph shows the
   * crawlers the stats function counts, and the URL Frontier's task count comes from its load balancer's healthy
   * targets. @default true
   */
  containerInsights?: boolean;
  /** The CloudWatch dashboard; without it the alarms are the same. @default true */
  dashboard?: boolean;
}

const MINUTE = Duration.minutes(1);
const FIVE_MINUTES = Duration.minutes(5);

/**
 * Average CPU (%) of the URL Frontier's tasks that pages someone once it holds for 15 minutes at urlFrontierMaxTasks.
 * Below the maximum, autoscaling answers load with tasks (it aims at {@link URL_FRONTIER_CPU_TARGET}); at the maximum
 * it cannot, and 85 % leaves the tasks little room before calls queue up behind a busy event loop.
 */
export const URL_FRONTIER_CPU_ALARM_PERCENT = 85;

/** Running tasks of a service, from Container Insights (enabled on the fleet's cluster, which both services share). */
function runningTasks(service: ecs.FargateService, label: string, statistic = 'Average', period = MINUTE) {
  return new cloudwatch.Metric({
    namespace: 'ECS/ContainerInsights',
    metricName: 'RunningTaskCount',
    dimensionsMap: { ClusterName: service.cluster.clusterName, ServiceName: service.serviceName },
    statistic,
    period,
    label,
  });
}

function graph(title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = [], width = 8) {
  return new cloudwatch.GraphWidget({ title, left, right, width, height: 6 });
}

/** A metric a function publishes through Powertools (namespace CrawlCluster, dimension `service`). */
function appMetric(service: string, name: string, statistic = 'Sum', period = MINUTE): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service },
    statistic,
    period,
    label: `${service} ${name}`,
  });
}

export class Observability extends Construct {
  readonly alarmTopic: sns.Topic;
  readonly #dashboard?: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly #insights: boolean;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    this.#insights = props.containerInsights ?? true;
    const { kafka, cache, functions, fleet, restApi } = props;
    this.alarmTopic = new sns.Topic(this, 'Alarms', { displayName: 'crawl-cluster alarms', enforceSSL: true });
    if (props.alarmEmail) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));

    // MSK's per-topic rate, summed over brokers (provisioned) or as is (Serverless), as messages per minute.
    const topicRate = (topic: string, label: string) =>
      new cloudwatch.MathExpression({
        expression: `SUM(SEARCH('Namespace="AWS/Kafka" MetricName="MessagesInPerSec" "Cluster Name"="${kafka.clusterName}" Topic="${topic}"', 'Average', 60)) * 60`,
        label,
        period: MINUTE,
      });
    const monitors = [
      { name: 'kafka-monitor', fn: functions.kafkaMonitor.function },
      { name: 'redis-monitor', fn: functions.redisMonitor.function },
    ];
    const offsetLag = (fn: (typeof monitors)[number]['fn'], name: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/Lambda',
        metricName: 'OffsetLag',
        dimensionsMap: { FunctionName: fn.functionName },
        statistic: 'Maximum',
        period: MINUTE,
        label: `${name} offset lag`,
      });
    const memory = cache.nodeIds.map(
      (node) =>
        new cloudwatch.Metric({
          namespace: 'AWS/ElastiCache',
          metricName: 'DatabaseMemoryUsagePercentage',
          dimensionsMap: { CacheClusterId: node },
          statistic: 'Maximum',
          period: FIVE_MINUTES,
          label: node,
        }),
    );

    if (props.dashboard ?? true)
      this.#dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
        dashboardName: Stack.of(this).stackName,
        defaultInterval: Duration.hours(3),
      });
    this.#row(
      graph('Ingest per minute', [
        appMetric('kafka-monitor', 'RequestsQueued'),
        appMetric('kafka-monitor', 'RequestsDuplicate'),
        appMetric('kafka-monitor', 'RequestsForwarded'),
        topicRate(kafka.topics.incoming, `${kafka.topics.incoming} messages`),
      ]),
      graph('Rejected and failed per minute', [
        appMetric('kafka-monitor', 'RequestsRejected'),
        topicRate(kafka.topics.rejected, `${kafka.topics.rejected} messages`),
        appMetric('kafka-monitor', 'RecordsFailed'),
        appMetric('redis-monitor', 'RecordsFailed'),
      ]),
      graph('Pages per minute', [topicRate(kafka.topics.crawledFirehose, 'pages (crawled_firehose messages)')]),
    );
    this.#row(
      graph('Backlog', [statsMetric('Backlog')], [statsMetric('BacklogPerTask')]),
      graph('Fleet', [
        statsMetric('TasksNeeded').with({ label: 'tasks needed (the scaling target)' }),
        statsMetric('LiveTasks').with({ label: 'tasks reporting' }),
        ...(this.#insights ? [runningTasks(fleet.service, 'running tasks')] : []),
        statsMetric('LiveCrawlers'),
      ]),
      graph(
        'Monitor offset lag (records)',
        monitors.map((m) => offsetLag(m.fn, m.name)),
      ),
    );
    this.#row(
      graph(
        'Fleet throughput (pages/s)',
        [
          statsMetric('PagesPerSecond').with({ label: 'fleet' }),
          statsMetric('TaskPagesPerSecond').with({ label: 'per saturated task' }),
        ],
        [
          statsMetric('SlotUtilization').with({ label: 'slots in use / slot limits' }),
          statsMetric('SaturatedShare').with({ label: 'saturated (budget- or ceiling-bound) share' }),
        ],
        24,
      ),
    );
    this.#row(
      graph(
        'Lambda errors',
        functions.all.map((f) => f.fn.function.metricErrors({ period: MINUTE, label: f.name })),
      ),
      graph(
        'Lambda duration (p99)',
        functions.all.map((f) => f.fn.function.metricDuration({ period: MINUTE, statistic: 'p99', label: f.name })),
      ),
      graph('Cache memory used (%)', memory),
    );
    // API Gateway's view (every answer, throttling and authorization failures included) next to the function's
    // own count of 5xx answers (Redis or Kafka unreachable).
    const api = restApi.api;
    const rest5xx = api.metricServerError({ period: MINUTE, statistic: 'Sum', label: 'API 5xx' });
    this.#row(
      graph(
        'REST API requests per minute',
        [api.metricCount({ period: MINUTE, statistic: 'Sum', label: 'requests' })],
        [
          api.metricClientError({ period: MINUTE, statistic: 'Sum', label: '4xx (incl. 403 unsigned, 429 throttled)' }),
          rest5xx,
          appMetric('rest', 'Responses5xx'),
        ],
      ),
      graph('REST API latency (ms)', [
        api.metricLatency({ period: MINUTE, statistic: 'p50', label: 'p50' }),
        api.metricLatency({ period: MINUTE, statistic: 'p99', label: 'p99' }),
        api.metricIntegrationLatency({ period: MINUTE, statistic: 'p99', label: 'integration p99' }),
      ]),
    );

    for (const f of functions.all) {
      this.alarm(`${f.name}Errors`, {
        metric: f.fn.function.metricErrors({ period: FIVE_MINUTES }),
        threshold: 3,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `${f.name} failed at least 3 times in 5 minutes`,
      });
    }
    for (const m of monitors) {
      this.alarm(`${m.name}OffsetLag`, {
        metric: offsetLag(m.fn, m.name).with({ period: FIVE_MINUTES }),
        threshold: 10_000,
        evaluationPeriods: 3,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `${m.name} is more than 10,000 records behind for 15 minutes`,
      });
      this.alarm(`${m.name}RecordsFailed`, {
        metric: appMetric(m.name, 'RecordsFailed', 'Sum', FIVE_MINUTES),
        threshold: 1,
        evaluationPeriods: 3,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `${m.name} could not process records (Redis or Kafka unreachable) for 15 minutes`,
      });
    }
    // What the monitors' MSK event sources gave up on (cdk/settings.ts eventSourceRetryAttempts, maxRecordAgeSec):
    // requests that were neither processed nor rejected, waiting in the failed-batch bucket for a replay.
    this.alarm('FailedBatches', {
      metric: new cloudwatch.Metric({
        namespace: 'AWS/S3',
        metricName: 'PutRequests',
        dimensionsMap: { BucketName: props.storage.failedBatches.bucketName, FilterId: FAILED_BATCH_METRICS_ID },
        statistic: 'Sum',
        period: FIVE_MINUTES,
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription:
        'An MSK batch the monitors could not process went to the failed-batch bucket: replay it once Redis and Kafka are healthy',
    });
    this.alarm('RestServerErrors', {
      metric: api.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' }),
      threshold: 5,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: 'The REST API answered 5xx at least 5 times in 5 minutes (Redis/Kafka down, timeouts)',
    });
    this.alarm('StatsMissing', {
      metric: statsMetric('Backlog', 'SampleCount').with({ period: FIVE_MINUTES }),
      threshold: 1,
      evaluationPeriods: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      alarmDescription: 'The stats function published nothing for 10 minutes: the fleet cannot autoscale',
    });
    this.alarm('BacklogWithoutCrawlers', {
      metric: new cloudwatch.MathExpression({
        expression: 'IF(backlog > 0 AND live < 1, 1, 0)',
        usingMetrics: { backlog: statsMetric('Backlog'), live: statsMetric('LiveCrawlers') },
        period: MINUTE,
      }),
      threshold: 1,
      evaluationPeriods: 15,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: 'Requests are queued but no crawler has been alive for 15 minutes',
    });
    // The fleet needs more tasks than it may run: its tasks are saturated at maxTasks with the backlog growing.
    this.alarm('FleetSaturatedAtMaxTasks', {
      metric: new cloudwatch.MathExpression({
        expression: `IF(tasks >= ${fleet.maxTasks} AND needed > tasks, 1, 0)`,
        usingMetrics: { needed: statsMetric('TasksNeeded'), tasks: statsMetric('LiveTasks') },
        period: MINUTE,
      }),
      threshold: 1,
      evaluationPeriods: 30,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription:
        `The crawler fleet has needed more than maxTasks (${fleet.maxTasks}) saturated tasks for 30 minutes: ` +
        'raise maxTasks (or taskCpu / taskMemoryMiB)',
    });
    // A cluster of many shards has more nodes than one alarm's metric math may use: one alarm per ALARM_METRICS_MAX
    // nodes, each naming its nodes when there is more than one.
    const groups = Math.ceil(memory.length / ALARM_METRICS_MAX);
    for (let g = 0; g < groups; g++) {
      const nodes = memory.slice(g * ALARM_METRICS_MAX, (g + 1) * ALARM_METRICS_MAX);
      const which = groups > 1 ? ` (nodes ${nodes[0]?.label} to ${nodes[nodes.length - 1]?.label})` : '';
      this.alarm(g === 0 ? 'CacheMemory' : `CacheMemory${g + 1}`, {
        metric: new cloudwatch.MathExpression({
          expression: `MAX([${nodes.map((_, i) => `m${i}`).join(', ')}])`,
          usingMetrics: Object.fromEntries(nodes.map((m, i) => [`m${i}`, m])),
          period: FIVE_MINUTES,
        }),
        threshold: 80,
        evaluationPeriods: 3,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `Valkey memory above 80%${which}: with noeviction, enqueues fail when it is full`,
      });
    }

    const alarm = (id: string, p: cloudwatch.AlarmProps) => this.alarm(id, p);
    brokerDiskAlarms(kafka, alarm);
    if (props.sink) sinkAlarm(props.sink, alarm);
    if (props.urlFrontier) this.watchUrlFrontier(props.urlFrontier);
  }

  /** An alarm that notifies the alarm topic. */
  private alarm(id: string, props: cloudwatch.AlarmProps): cloudwatch.Alarm {
    const a = new cloudwatch.Alarm(this, id, props);
    a.addAlarmAction(new actions.SnsAction(this.alarmTopic));
    this.alarms.push(a);
    return a;
  }

  /**
   * The URL Frontier's row of the dashboard (its tasks' CPU and memory, its load balancer's targets and flows, its
   * backlog as the stats function counts it) and its alarms: no healthy target, and CPU high at the task maximum.
   */
  private watchUrlFrontier(frontier: UrlFrontier): void {
    const { service, loadBalancer, targetGroup } = frontier;
    this.#row(
      new cloudwatch.GraphWidget({
        title: 'URL Frontier CPU and memory (%)',
        left: [
          service.metricCpuUtilization({ period: MINUTE, label: 'CPU' }),
          service.metricMemoryUtilization({ period: MINUTE, label: 'memory' }),
        ],
        right: [this.#frontierTasks(frontier, 'Average', MINUTE)],
        leftYAxis: { min: 0, max: 100 },
        leftAnnotations: [
          { value: URL_FRONTIER_CPU_TARGET, label: 'CPU scaling target' },
          { value: URL_FRONTIER_CPU_ALARM_PERCENT, label: 'CPU alarm at max tasks' },
        ],
        width: 6,
        height: 6,
      }),
      // The worst load balancer node's view: fewest healthy, most unhealthy.
      graph(
        'URL Frontier targets',
        [
          targetGroup.metrics.healthyHostCount({ statistic: 'Minimum', period: MINUTE, label: 'healthy' }),
          targetGroup.metrics.unHealthyHostCount({ statistic: 'Maximum', period: MINUTE, label: 'unhealthy' }),
        ],
        [],
        6,
      ),
      graph(
        'URL Frontier flows (connections)',
        [loadBalancer.metrics.activeFlowCount({ statistic: 'Average', period: MINUTE, label: 'active flows' })],
        [loadBalancer.metrics.newFlowCount({ statistic: 'Sum', period: MINUTE, label: 'new flows per minute' })],
        6,
      ),
      graph('URL Frontier backlog', [statsMetric('UrlFrontierBacklog').with({ label: 'URLs due or held' })], [], 6),
    );

    // ELB reports HealthyHostCount whenever health checks are on (its documented criterion), and a target group
    // always has them: a missing point is no news of a healthy task, so it breaches, as the stats function's silence
    // does for StatsMissing (the alarms on counts of failures read a missing point as none). Three minutes: a dead
    // task is unhealthy after two 10 s checks and its replacement healthy a minute or two later, deploys keep
    // minHealthyPercent 100, and urlFrontierMinTasks is at least 1, so zero healthy for that long is an outage.
    const noHealthyTarget = this.alarm('UrlFrontierNoHealthyTarget', {
      metric: targetGroup.metrics.healthyHostCount({ statistic: 'Maximum', period: MINUTE }),
      threshold: 1,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      alarmDescription:
        'No healthy URL Frontier task behind its load balancer for 3 minutes: UrlFrontierEndpoint cannot serve calls',
    });
    // Created once the service is stable, so a first deploy does not page for the minutes before a task is healthy.
    noHealthyTarget.node.addDependency(service);

    // Only at the maximum: below it, high CPU is autoscaling's to answer. Missing data is no tasks (the alarm above)
    // or no Container Insights point, neither of them news of saturation.
    this.alarm('UrlFrontierCpuAtMaxTasks', {
      metric: new cloudwatch.MathExpression({
        expression: `IF(tasks >= ${frontier.maxTasks}, cpu, 0)`,
        usingMetrics: {
          cpu: service.metricCpuUtilization({ period: FIVE_MINUTES }),
          tasks: this.#frontierTasks(frontier, 'Minimum', FIVE_MINUTES),
        },
        period: FIVE_MINUTES,
        label: `CPU % at ${frontier.maxTasks} tasks`,
      }),
      threshold: URL_FRONTIER_CPU_ALARM_PERCENT,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription:
        `The URL Frontier has run urlFrontierMaxTasks (${frontier.maxTasks}) tasks above ` +
        `${URL_FRONTIER_CPU_ALARM_PERCENT}% CPU for 15 minutes: raise urlFrontierMaxTasks or urlFrontierTaskCpu`,
    });
  }

  /** The URL Frontier's running tasks: Container Insights', or else its load balancer's healthy targets. */
  #frontierTasks(frontier: UrlFrontier, statistic: string, period: Duration): cloudwatch.IMetric {
    if (this.#insights) return runningTasks(frontier.service, 'running tasks', statistic, period);
    return frontier.targetGroup.metrics.healthyHostCount({
      statistic,
      period,
      label: 'running tasks (healthy targets)',
    });
  }

  /** The dashboard; there is none with `dashboard=false`. */
  get dashboard(): cloudwatch.Dashboard {
    if (!this.#dashboard) throw new Error('the stack has no dashboard (dashboard=false)');
    return this.#dashboard;
  }

  /** A row of widgets on the dashboard, when the stack has one. */
  #row(...widgets: cloudwatch.IWidget[]): void {
    this.#dashboard?.addWidgets(...widgets);
  }

  /** The console URL of the dashboard. */
  dashboardUrl(): string {
    const region = Stack.of(this).region;
    return `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${Stack.of(this).stackName}`;
  }
}
