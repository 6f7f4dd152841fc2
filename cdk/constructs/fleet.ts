/**
 * The crawler fleet: an ECS cluster and a Fargate service (arm64) running functions/crawler/Dockerfile, with a
 * deployment circuit breaker that rolls back, a stop timeout longer than the crawler's own drain deadline, and
 * step scaling on what the tasks sustain: `TasksNeeded` against `LiveTasks`, which the stats function publishes every
 * minute from the load each task reports with its heartbeat (lib/monitor/fleet-sizing.ts; docs/design.md §8 "Fleet
 * sizing"): out fast while the tasks are saturated and the backlog would outlast 10 minutes, in slowly when they are
 * not, down to zero when the frontier is empty (if minTasks is 0).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Duration, IgnoreMode, RemovalPolicy } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ecr from 'aws-cdk-lib/aws-ecr';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { acknowledge } from '../nag.ts';
import { REPO_ROOT } from '../repo-root.ts';
import type { RuntimeEnv } from '../runtime-env.ts';
import type { Settings } from '../settings.ts';
import type { Cache } from './cache.ts';
import { crawlerService } from './crawler-service.ts';
import type { Kafka } from './kafka.ts';
import type { Network } from './network.ts';
import type { Storage } from './storage.ts';

/** The fleet's settings are the stack's (cdk/settings.ts documents each). */
export interface FleetProps
  extends Pick<
    Settings,
    | 'taskCpu'
    | 'taskMemoryMiB'
    | 'minTasks'
    | 'maxTasks'
    | 'crawlerConcurrencyMin'
    | 'crawlerConcurrencyMax'
    | 'shutdownDeadlineMs'
    | 'createEcsServiceLinkedRole'
    | 'crawlerPlugins'
    | 'crawlerImage'
    | 'containerInsights'
    | 'proxiesSecret'
    | 'crawlerCapacity'
    | 'crawlerOnDemandBase'
  > {
  network: Network;
  kafka: Kafka;
  cache: Cache;
  storage: Storage;
  logRetention: logs.RetentionDays;
  runtimeEnv: RuntimeEnv;
}

/** Where the image's plugins live: the Dockerfile copies the plugin directory here. */
const IMAGE_PLUGINS_DIR = 'plugins';

/** The directory the Dockerfile copies when the stack ships no plugins (it holds only a README). */
const NO_PLUGINS_DIR = 'functions/crawler/plugins';

/**
 * The crawler image's plugin build arguments for a plugin directory (relative to the repository root): the
 * directory to copy (`PLUGINS_DIR`) and its top-level `.ts`/`.js`/`.mjs` modules as `CRAWLER_PLUGINS` paths in
 * the image.
 * @throws when the directory does not exist or holds no module, so a typo fails synthesis, not the deployed tasks
 */
export function pluginBuildArgs(
  root: string,
  dir: string | undefined,
): { PLUGINS_DIR: string; CRAWLER_PLUGINS: string } {
  if (dir === undefined) return { PLUGINS_DIR: NO_PLUGINS_DIR, CRAWLER_PLUGINS: '' };
  const path = join(root, dir);
  if (!existsSync(path) || !statSync(path).isDirectory()) {
    throw new Error(`crawlerPlugins: ${dir} is not a directory under the repository root`);
  }
  const modules = readdirSync(path)
    .filter((f) => /\.(?:ts|js|mjs)$/.test(f) && !f.endsWith('.d.ts') && !/\.test\.[jt]s$/.test(f))
    .sort();
  if (modules.length === 0) throw new Error(`crawlerPlugins: ${dir} holds no .ts, .js or .mjs module`);
  return {
    PLUGINS_DIR: dir.replace(/\/+$/, ''),
    CRAWLER_PLUGINS: modules.map((m) => `${IMAGE_PLUGINS_DIR}/${m}`).join(','),
  };
}

/** Docker ignore patterns that let `dir` (and only it, of its parents) into a build context that excludes `*`. */
function includeDir(dir: string): string[] {
  const parts = dir.replace(/\/+$/, '').split('/');
  return parts.flatMap((_, i) => {
    const prefix = parts.slice(0, i + 1).join('/');
    return i < parts.length - 1 ? [`!${prefix}`, `${prefix}/*`] : [`!${prefix}`];
  });
}

/** The crawler image built from functions/crawler/Dockerfile with the plugin directory, if any. */
function buildImage(scope: Construct, crawlerPlugins: string | undefined): ecrAssets.DockerImageAsset {
  const plugins = pluginBuildArgs(REPO_ROOT, crawlerPlugins);
  return new ecrAssets.DockerImageAsset(scope, 'Image', {
    directory: REPO_ROOT,
    file: 'functions/crawler/Dockerfile',
    platform: ecrAssets.Platform.LINUX_ARM64,
    // The plugin directory is copied into the image and its modules named in CRAWLER_PLUGINS (docs/spiders.md); a broken plugin stops each task at start with its name, and the deployment rolls back.
    buildArgs: plugins,
    // The build context is the repository root; only what the Dockerfile copies goes in.
    exclude: [
      '*',
      '!package.json',
      '!package-lock.json',
      '!lib',
      '!functions',
      'functions/*',
      '!functions/crawler',
      '!functions/shared',
      '!functions/url-frontier',
      ...(crawlerPlugins === undefined ? [] : includeDir(plugins.PLUGINS_DIR)),
    ],
    ignoreMode: IgnoreMode.DOCKER,
  });
}

/** An ECR image URI: `<account>.dkr.ecr.<region>.amazonaws.com/<repository>(:<tag>|@<digest>)`. */
const ECR_IMAGE =
  /^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?\/([a-z0-9._/-]+?)(?::([\w.-]+)|@(sha256:[0-9a-f]{64}))$/;

/**
 * A prebuilt image (context crawlerImage): from ECR through a repository reference, so that the execution role gets
 * pull rights on that repository; from any other registry as is (it must be public: tasks in isolated subnets reach
 * ECR only, through the endpoints).
 */
function prebuiltImage(scope: Construct, uri: string): ecs.ContainerImage {
  const m = ECR_IMAGE.exec(uri);
  if (!m) return ecs.ContainerImage.fromRegistry(uri);
  const repository = ecr.Repository.fromRepositoryName(scope, 'ImageRepository', m[1] as string);
  return ecs.ContainerImage.fromEcrRepository(repository, m[2] ?? m[3]);
}

/** The stats function's metrics (functions/stats/handler.ts), but the per-spider one. */
export const STATS_METRICS = [
  'Backlog',
  'LiveCrawlers',
  'BacklogPerTask',
  'UrlFrontierBacklog',
  'LiveTasks',
  'PagesPerSecond',
  'TaskPagesPerSecond',
  'SlotUtilization',
  'SaturatedShare',
  'TasksNeeded',
] as const;

/** The stats function's metrics (Powertools adds the `service` dimension). */
export function statsMetric(name: (typeof STATS_METRICS)[number], statistic = 'Maximum') {
  return new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: 'stats' },
    period: Duration.minutes(1),
    statistic,
  });
}

/**
 * Where the crawler tasks run with `crawlerCapacity=spot`: Fargate Spot, but for the first `crawlerOnDemandBase`
 * tasks on on-demand Fargate; undefined (the Fargate launch type) otherwise. A Spot interruption is a SIGTERM two
 * minutes ahead, then SIGKILL after the container's stop timeout (at most 120 s, ./crawler-service.ts): the crawler
 * drains as on any stop, and what it does not finish goes back to the queue.
 */
function spotStrategy(props: FleetProps): ecs.CapacityProviderStrategy[] | undefined {
  if (props.crawlerCapacity !== 'spot') return undefined;
  return [
    { capacityProvider: 'FARGATE_SPOT', weight: 1 },
    ...(props.crawlerOnDemandBase > 0
      ? [{ capacityProvider: 'FARGATE', base: props.crawlerOnDemandBase, weight: 0 }]
      : []),
  ];
}

export class Fleet extends Construct {
  readonly cluster: ecs.Cluster;
  readonly service: ecs.FargateService;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  /**
   * The task image, built once from functions/crawler/Dockerfile; the URL Frontier service runs it too. Undefined
   * with a prebuilt crawlerImage.
   */
  readonly imageAsset?: ecrAssets.DockerImageAsset;
  /** {@link imageAsset} (or the prebuilt image) as a container image. */
  readonly image: ecs.ContainerImage;
  /** ECS's service-linked role, with createEcsServiceLinkedRole; every ECS service must depend on it. */
  readonly serviceLinkedRole?: iam.CfnServiceLinkedRole;
  /** The most tasks autoscaling runs (maxTasks). */
  readonly maxTasks: number;

  constructor(scope: Construct, id: string, props: FleetProps) {
    super(scope, id);
    this.maxTasks = props.maxTasks;
    const { network } = props;
    this.cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: network.vpc,
      containerInsightsV2: props.containerInsights ? ecs.ContainerInsights.ENABLED : ecs.ContainerInsights.DISABLED,
      enableFargateCapacityProviders: props.crawlerCapacity === 'spot',
    });
    if (!props.containerInsights)
      acknowledge(
        this.cluster,
        'ECS4',
        'containerInsights=false (profile small) saves its metrics and logs; the dashboard counts crawlers from the ' +
          'stats function instead.',
      );
    if (props.createEcsServiceLinkedRole) {
      // An account that never used ECS has no AWSServiceRoleForECS, and creating a service then fails ("Unable to
      // assume the service linked role"). Kept on deletion: other ECS resources of the account may use it.
      this.serviceLinkedRole = new iam.CfnServiceLinkedRole(this, 'EcsServiceLinkedRole', {
        awsServiceName: 'ecs.amazonaws.com',
        description: 'Amazon ECS service-linked role (created by crawl-cluster for a fresh account)',
      });
      this.serviceLinkedRole.applyRemovalPolicy(RemovalPolicy.RETAIN);
      this.cluster.node.addDependency(this.serviceLinkedRole);
    }

    if (props.crawlerImage !== undefined) this.image = prebuiltImage(this, props.crawlerImage);
    else {
      this.imageAsset = buildImage(this, props.crawlerPlugins);
      this.image = ecs.ContainerImage.fromDockerImageAsset(this.imageAsset);
    }
    const crawlers = crawlerService(this, {
      ...props,
      cluster: this.cluster,
      serviceLinkedRole: this.serviceLinkedRole,
      containerName: 'crawler',
      image: this.image,
      kafkaClientId: 'crawl-cluster-crawler',
      environment: {
        // Adaptive slots between these (CRAWLER_CONCURRENCY=0, the default); see docs/design.md §8 "Fleet sizing".
        CRAWLER_CONCURRENCY_MIN: String(props.crawlerConcurrencyMin),
        CRAWLER_CONCURRENCY_MAX: String(props.crawlerConcurrencyMax),
      },
      bodyWriters: 'Crawlers',
      capacityProviderStrategies: spotStrategy(props),
    });
    this.taskDefinition = crawlers.taskDefinition;
    this.service = crawlers.service;

    this.#autoscale(props);
  }

  /**
   * The scaling policy. The stats function publishes, every minute, `TasksNeeded` (the tasks the backlog needs, from
   * what the tasks measure they sustain) and `LiveTasks` (the tasks reporting); the fleet steps towards the first:
   * - Out: one minute with `TasksNeeded - LiveTasks` >= 1 adds tasks, as many as the gap's power of two below it (1,
   *   2, 4, ... 64: never past the need), then waits 2 minutes for the new tasks to start and report. TasksNeeded only
   *   exceeds LiveTasks when the tasks are saturated (their slots held by CPU, memory, event-loop or body budgets, or
   *   their ceiling, not by a lack of due work) and the backlog would take over 10 minutes at the pages/s a saturated
   *   task measures, or when no task runs and requests are queued (one starts and measures) or a request was just
   *   rejected for a spider type or proxy group no crawler has registered (one starts and registers its names).
   * - In: ten minutes with the gap at -1 or below removes a fifth of the tasks (at least one), then waits 5 minutes.
   *   TasksNeeded falls below LiveTasks only when the tasks are not saturated and their summed load (each one's highest
   *   budget share) fits in fewer at 60 % each, or when the frontier is empty; it stays at least 1 while anything is
   *   queued, so the last task stays.
   * No constant of requests per task: a task's capacity is what it measures (pages/s), wherever it runs.
   */
  #autoscale(props: FleetProps): void {
    const scaling = this.service.autoScaleTaskCount({ minCapacity: props.minTasks, maxCapacity: props.maxTasks });
    const gap = new cloudwatch.MathExpression({
      expression: 'needed - tasks',
      usingMetrics: { needed: statsMetric('TasksNeeded'), tasks: statsMetric('LiveTasks') },
      period: Duration.minutes(1),
      label: 'TasksNeeded - LiveTasks',
    });
    scaling.scaleOnMetric('ScaleOut', {
      metric: gap,
      adjustmentType: appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
      scalingSteps: [
        { upper: 1, change: 0 },
        ...[1, 2, 4, 8, 16, 32].map((n) => ({ lower: n, upper: 2 * n, change: n })),
        { lower: 64, change: 64 },
      ],
      evaluationPeriods: 1,
      cooldown: Duration.minutes(2),
    });
    scaling.scaleOnMetric('ScaleIn', {
      metric: gap,
      adjustmentType: appscaling.AdjustmentType.PERCENT_CHANGE_IN_CAPACITY,
      minAdjustmentMagnitude: 1,
      scalingSteps: [
        { upper: -1, change: -20 },
        { lower: -1, change: 0 },
      ],
      evaluationPeriods: 10,
      cooldown: Duration.minutes(5),
    });
  }
}
