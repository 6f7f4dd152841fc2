/**
 * The browser fleet (docs/spiders-browser.md), behind the context flag `browserFleet` (default off): a Fargate service
 * of its own, in the crawler fleet's ECS cluster, running the browser crawler image (functions/crawler/
 * browser.Dockerfile: the crawler plus a pinned Chromium) with CRAWLER_SPIDERS=browser, so only its tasks lease
 * `browser` requests and HTML crawling never pays for a browser. It scales on the browser backlog alone (the stats
 * function's `SpiderBacklog` for spider `browser`) per running task: out when pages wait, to zero when none do.
 *
 * Its settings are context keys of its own, read here so the stack's settings stay as they are:
 * `browserFleet` (false), `browserTaskCpu` (2048), `browserTaskMemoryMiB` (4096), `browserMinTasks` (0),
 * `browserMaxTasks` (10), `browserBacklogPerTask` (50).
 */
import { Duration, IgnoreMode } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct, type Node } from 'constructs';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { SettingsError } from '../context-values.ts';
import { REPO_ROOT } from '../repo-root.ts';
import type { RuntimeEnv } from '../runtime-env.ts';
import type { Cache } from './cache.ts';
import { crawlerService } from './crawler-service.ts';
import type { Fleet } from './fleet.ts';
import type { Kafka } from './kafka.ts';
import type { Network } from './network.ts';
import type { Storage } from './storage.ts';

/** The browser fleet's context keys (see the module doc). */
export interface BrowserFleetSettings {
  enabled: boolean;
  taskCpu: number;
  taskMemoryMiB: number;
  minTasks: number;
  maxTasks: number;
  backlogPerTask: number;
}

const FARGATE_CPU = [1024, 2048, 4096, 8192, 16384];

/** Reads and checks the browser fleet's context keys; a wrong value fails synthesis with the key's name. */
export function browserFleetSettings(node: Node): BrowserFleetSettings {
  const int = (key: string, fallback: number, min: number, max: number): number => {
    const v = node.tryGetContext(key) as unknown;
    if (v === undefined) return fallback;
    const n = typeof v === 'string' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
      throw new SettingsError(key, `must be an integer in [${min}, ${max}] (got ${JSON.stringify(v)})`);
    return n;
  };
  const flag = node.tryGetContext('browserFleet') as unknown;
  if (flag !== undefined && ![true, false, 'true', 'false'].includes(flag as string))
    throw new SettingsError('browserFleet', `must be true or false (got ${JSON.stringify(flag)})`);
  const taskCpu = int('browserTaskCpu', 2048, 1024, 16384);
  if (!FARGATE_CPU.includes(taskCpu))
    throw new SettingsError('browserTaskCpu', `must be one of ${FARGATE_CPU.join(', ')} (Chromium needs a core)`);
  const minTasks = int('browserMinTasks', 0, 0, 1000);
  return {
    enabled: flag === true || flag === 'true',
    taskCpu,
    taskMemoryMiB: int('browserTaskMemoryMiB', 4096, 2048, 122_880),
    minTasks,
    maxTasks: int('browserMaxTasks', 10, Math.max(1, minTasks), 1000),
    backlogPerTask: int('browserBacklogPerTask', 50, 1, 1_000_000),
  };
}

export interface BrowserFleetProps extends Omit<BrowserFleetSettings, 'enabled'> {
  network: Network;
  kafka: Kafka;
  cache: Cache;
  storage: Storage;
  /** The crawler fleet: its ECS cluster (and service-linked role) host this service too. */
  fleet: Fleet;
  shutdownDeadlineMs: number;
  logRetention: logs.RetentionDays;
  runtimeEnv: RuntimeEnv;
  /** The secret holding the crawlers' proxies (context proxiesSecret), as the crawler fleet gets it. */
  proxiesSecret?: string;
}

export class BrowserFleet extends Construct {
  readonly service: ecs.FargateService;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly imageAsset: ecrAssets.DockerImageAsset;

  constructor(scope: Construct, id: string, props: BrowserFleetProps) {
    super(scope, id);
    const { fleet } = props;
    this.imageAsset = new ecrAssets.DockerImageAsset(this, 'Image', {
      directory: REPO_ROOT,
      file: 'functions/crawler/browser.Dockerfile',
      platform: ecrAssets.Platform.LINUX_ARM64,
      exclude: [
        '*',
        '!package.json',
        '!package-lock.json',
        '!lib',
        '!functions',
        'functions/*',
        '!functions/crawler',
        '!functions/shared',
      ],
      ignoreMode: IgnoreMode.DOCKER,
    });
    // As the crawler fleet: no task until the backlog policy starts one (see ./crawler-service.ts).
    const browsers = crawlerService(this, {
      ...props,
      cluster: fleet.cluster,
      serviceLinkedRole: fleet.serviceLinkedRole,
      containerName: 'browser',
      image: ecs.ContainerImage.fromDockerImageAsset(this.imageAsset),
      kafkaClientId: 'crawl-cluster-browser',
      environment: { CRAWLER_SPIDERS: 'browser', BROWSER_CHROMIUM_PATH: '/usr/bin/chromium' },
      bodyWriters: 'Browser crawlers',
    });
    this.taskDefinition = browsers.taskDefinition;
    this.service = browsers.service;
    this.#autoscale(props, fleet);
  }

  #autoscale(props: BrowserFleetProps, fleet: Fleet): void {
    const t = props.backlogPerTask;
    const scaling = this.service.autoScaleTaskCount({ minCapacity: props.minTasks, maxCapacity: props.maxTasks });
    const usingMetrics = {
      backlog: new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: 'SpiderBacklog',
        dimensionsMap: { service: 'stats', spider: 'browser' },
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      // Container Insights (on for the cluster): this service's running tasks.
      running: new cloudwatch.Metric({
        namespace: 'ECS/ContainerInsights',
        metricName: 'RunningTaskCount',
        dimensionsMap: { ClusterName: fleet.cluster.clusterName, ServiceName: this.service.serviceName },
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
    };
    // Browser backlog per running task; with none running, any backlog starts a first task.
    const perTask = new cloudwatch.MathExpression({
      expression: `IF(running < 1, IF(backlog > 0, ${t} + backlog, 0), backlog / running)`,
      usingMetrics,
      period: Duration.minutes(1),
      label: 'Browser backlog per task',
    });
    scaling.scaleOnMetric('ScaleOut', {
      metric: perTask,
      adjustmentType: appscaling.AdjustmentType.PERCENT_CHANGE_IN_CAPACITY,
      minAdjustmentMagnitude: 1,
      scalingSteps: [
        { upper: t, change: 0 },
        { lower: t, upper: 4 * t, change: 50 },
        { lower: 4 * t, change: 100 },
      ],
      evaluationPeriods: 1,
      cooldown: Duration.minutes(2),
    });
    // In slowly, and to zero only when no browser page waits: a task costs a Chromium's memory.
    const inMetric = new cloudwatch.MathExpression({
      expression: `IF(running <= 1 AND backlog > 0, ${t}, IF(running < 1, 0, backlog / running))`,
      usingMetrics,
      period: Duration.minutes(1),
      label: 'Browser backlog per task (scale in)',
    });
    scaling.scaleOnMetric('ScaleIn', {
      metric: inMetric,
      adjustmentType: appscaling.AdjustmentType.PERCENT_CHANGE_IN_CAPACITY,
      minAdjustmentMagnitude: 1,
      scalingSteps: [
        { upper: t / 4, change: -50 },
        { lower: t / 4, change: 0 },
      ],
      evaluationPeriods: 10,
      cooldown: Duration.minutes(5),
    });
  }
}
