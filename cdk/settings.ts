/**
 * The deployment's knobs, read once from CDK context (`cdk.json` or `cdk deploy -c key=value`) and validated
 * here, so a wrong value fails synth with the context key's name instead of producing a broken stack.
 * Runtime settings (the environment variables the code reads) are not duplicated here: `runtimeEnv` overrides
 * any of them by the name lib/config/variables.ts gives it.
 */
import type { Node } from 'constructs';
import { VARIABLES, type VariableName } from '../lib/config/variables.ts';
import { type CacheSettings, readCacheSettings } from './cache-settings.ts';
import { bool, type Get, int, SettingsError, str } from './context-values.ts';
import { PROFILES, type Profile } from './profiles.ts';

export interface Settings extends CacheSettings {
  /**
   * A named set of defaults for the other keys (docs/cost.md): `standard` is the stack as it always was, `small` the
   * cheapest stack that still crawls (PROFILES in ./profiles.ts). A key given explicitly wins over its profile.
   * @default 'standard'
   */
  profile: Profile;
  /** Topic prefix of every Kafka topic (KAFKA_TOPIC_PREFIX). @default VARIABLES.KAFKA_TOPIC_PREFIX.default */
  topicPrefix: string;
  /**
   * Partitions per topic, created by the topics custom resource. On MSK Serverless the stack raises it to what the
   * crawled firehose needs at maxTasks (cdk/stack.ts, docs/cost.md). @default VARIABLES.KAFKA_TOPIC_PARTITIONS.default
   */
  topicPartitions: number;
  /** Availability zones of the VPC (MSK Serverless needs at least 2). @default 2, or the pinned zones' count */
  maxAzs: number;
  /**
   * Pin the VPC's zones (`us-east-1a,us-east-1b`, at least 2): for a region where one zone lacks a service or an
   * instance type. Needs an environment-specific stack (account and region known at synth). @default CDK's choice
   */
  availabilityZones?: string[];
  /** Zones the interface endpoints span (1 is cheapest; clients in every zone reach them). @default maxAzs */
  endpointAzs: number;
  /**
   * Crawler tasks in public subnets with a public IP each (no NAT gateway at all: cheaper, and one egress IP per
   * task for SCHEDULER_IP_ENABLED). Otherwise they egress through NAT from private subnets. @default false
   */
  crawlerPublicSubnets: boolean;
  /** NAT gateways when crawlers use NAT (one per AZ survives an AZ outage). @default maxAzs */
  natGateways: number;
  /** `serverless` (MSK Serverless, IAM) or `provisioned` (MSK provisioned, TLS + IAM). @default 'serverless' */
  kafka: 'serverless' | 'provisioned';
  /** Provisioned MSK only. @default '3.8.x' */
  kafkaVersion: string;
  /** Provisioned MSK only: broker count, a multiple of maxAzs. @default maxAzs */
  kafkaBrokers: number;
  /** Provisioned MSK only. @default 'kafka.m7g.large' */
  kafkaInstanceType: string;
  /**
   * Provisioned MSK only: EBS GiB per broker. With `pagesPerMonth` and no value given, the stack raises it to what
   * the firehose's retention needs at that volume (cdk/kafka-sizing.ts); a value given too small gets a synth
   * warning. @default 100
   */
  kafkaVolumeGiB: number;
  /**
   * Hours every topic keeps a message (`retention.ms` of the topics the stack creates): what broker storage and MSK
   * Serverless storage are sized and billed for. @default 168 (Kafka's default)
   */
  retentionHours: number;
  /**
   * The pages a month the deployment is sized for: provisioned brokers get the storage the retention needs at that
   * volume, and MSK Serverless is checked against its largest partition. `npm run cost -- --pages-per-month N` sets
   * it. @default none (no sizing; synth says what the storage holds)
   */
  pagesPerMonth?: number;
  /**
   * Provisioned MSK only: CloudWatch monitoring level. DEFAULT is free; the per-topic levels feed the dashboard's
   * ingest and pages graphs and are billed as CloudWatch metrics. @default 'PER_TOPIC_PER_BROKER'
   */
  kafkaMonitoring: 'DEFAULT' | 'PER_BROKER' | 'PER_TOPIC_PER_BROKER' | 'PER_TOPIC_PER_PARTITION';
  /**
   * The monitors' MSK event sources: `provisioned` (dedicated pollers billed per Event Poller Unit-hour; partial batch
   * responses, bisect and bounded retries) or `on-demand` (no poller charge; none of those controls, so a failing
   * batch is retried whole until it succeeds or ages out, and the VPC needs Lambda and STS endpoints or NAT).
   * @default 'provisioned'
   */
  eventSourceMode: 'provisioned' | 'on-demand';
  /** Provisioned event pollers per MSK event source mapping (both mappings share one poller group). @default 1 */
  minPollers: number;
  /** @default 4 */
  maxPollers: number;
  /** kafka-monitor records per invocation. @default 500 */
  ingestBatchSize: number;
  /**
   * The monitors' MSK event sources: a batch whose oldest record is older than this (seconds) is no longer retried;
   * it goes to the failed-batch bucket (for replay) and the FailedBatches alarm fires. The handlers answer poison with
   * rejections and fail records only when Redis or Kafka is unreachable, so this bounds how long one partition waits
   * out such an outage. Lambda accepts 60 to 604800. @default 3600
   */
  maxRecordAgeSec: number;
  /**
   * The monitors' MSK event sources: retries of a failing batch (after the first attempt) before it goes to the
   * failed-batch bucket, whichever of this and maxRecordAgeSec comes first. Lambda accepts 0 to 10000; 10 is what
   * Lambda itself applies to infinite retries with an on-failure destination. @default 10
   */
  eventSourceRetryAttempts: number;
  /**
   * The monitors' MSK event sources: split a failing batch in two and retry each half, so that one bad record
   * (a batch that crashes or times out the function) ends up alone in the failed-batch bucket. @default true
   */
  bisectBatchOnError: boolean;
  /**
   * A prebuilt crawler image (`<registry>/<repository>:<tag>`, linux/arm64, built from functions/crawler/Dockerfile)
   * instead of building it at deploy time: for a machine without an arm64 Docker builder. @default built from source
   */
  crawlerImage?: string;
  /** Container Insights on the ECS cluster (billed as CloudWatch metrics and logs). @default true */
  containerInsights: boolean;
  /**
   * Crawler task vCPU units. @default 1024: one event loop crawls, so 1 vCPU is what one process uses (docs/design.md
   * §8 "Fleet sizing")
   */
  taskCpu: number;
  /** @default 2048: the crawler's memory budgets are shares of it (RSS 80 %, bodies being read 25 %) */
  taskMemoryMiB: number;
  /**
   * Where crawler tasks run: `spot` (Fargate Spot, a capacity provider strategy; an interruption is a SIGTERM two
   * minutes ahead, which the crawler drains like any stop) or `on-demand` (Fargate). @default 'on-demand'
   */
  crawlerCapacity: 'spot' | 'on-demand';
  /** With `crawlerCapacity=spot`: the first this many tasks run on on-demand Fargate, the rest on Spot. @default 0 */
  crawlerOnDemandBase: number;
  /** Fleet floor; 0 lets the fleet scale to zero when the frontier is empty. @default 0 */
  minTasks: number;
  /** @default 10 */
  maxTasks: number;
  /** CRAWLER_CONCURRENCY_MIN of the crawler tasks: fewest adaptive fetch slots. @default VARIABLES default (8) */
  crawlerConcurrencyMin: number;
  /** CRAWLER_CONCURRENCY_MAX of the crawler tasks: most adaptive fetch slots. @default VARIABLES default (256) */
  crawlerConcurrencyMax: number;
  /** SHUTDOWN_DEADLINE_MS of the crawler; the ECS stop timeout is this plus a flush margin (≤ 120 s). @default 60000 */
  shutdownDeadlineMs: number;
  /** REST API (HTTP API `$default` stage): steady requests per second across all callers. @default 50 */
  restRateLimit: number;
  /**
   * REST API: requests allowed in a burst above the steady rate: the stage's counterpart of the local server's
   * bound on requests in flight. @default REST_MAX_IN_FLIGHT of `runtimeEnv`, else its default (100), at most 5000
   */
  restBurstLimit: number;
  /** Days large bodies stay in S3. @default 30 */
  bodyRetentionDays: number;
  /** Days the records of MSK batches that could not be processed stay in S3 for replay. @default 30 */
  failedBatchRetentionDays: number;
  /** Days log groups keep their events. @default 30 */
  logRetentionDays: number;
  /** The CloudWatch dashboard (billed per dashboard-month); the alarms do not depend on it. @default true */
  dashboard: boolean;
  /** Optional e-mail subscribed to the alarm topic. @default none */
  alarmEmail?: string;
  /**
   * Deploy the URL Frontier gRPC API (functions/url-frontier, the crawler image) as its own Fargate service behind
   * an internal Network Load Balancer. @default true
   */
  urlFrontier: boolean;
  /** URL Frontier task vCPU units (a Fargate size). @default 512 */
  urlFrontierTaskCpu: number;
  /** @default 1024 */
  urlFrontierTaskMemoryMiB: number;
  /** URL Frontier tasks at least (not 0: the endpoint must answer; 2 survive the loss of a task or a zone). @default 2 */
  urlFrontierMinTasks: number;
  /** URL Frontier tasks at most (it scales on CPU). @default 6 */
  urlFrontierMaxTasks: number;
  /**
   * ARN of an ACM certificate in the stack's region: adds a TLS listener (port 7443, ALPN h2) to the URL Frontier's
   * load balancer, next to the plaintext one on 7071. @default none
   */
  urlFrontierCertificateArn?: string;
  /**
   * Create the ECS service-linked role (AWSServiceRoleForECS) with the stack, for an account that has never used ECS:
   * CloudFormation then fails with "Unable to assume the service linked role". Leave it false when the role exists
   * (creating it again fails), or create it once with
   * `aws iam create-service-linked-role --aws-service-name ecs.amazonaws.com`. The stack keeps it on deletion.
   * @default false
   */
  createEcsServiceLinkedRole: boolean;
  /**
   * Create Application Auto Scaling's service-linked role for ECS (AWSServiceRoleForApplicationAutoScaling_ECSService),
   * which the scalable targets of both services name: an account that never autoscaled an ECS service lacks it.
   * Same caveats as createEcsServiceLinkedRole. @default false
   */
  createAutoScalingServiceLinkedRole: boolean;
  /**
   * A directory of spider plugins, relative to the repository root (docs/spiders.md): copied into the
   * crawler image as `/app/plugins`, and every `.ts`/`.js`/`.mjs` file at its top level named in the image's
   * `CRAWLER_PLUGINS`. @default none: the built-in spiders only
   */
  crawlerPlugins?: string;
  /**
   * A Secrets Manager secret (its name, or its complete ARN) holding the crawlers' proxies as the JSON object
   * `{"CRAWLER_PROXIES": "...", "CRAWLER_PROXY_GROUPS": "..."}` (docs/proxies.md): both fleets get them as ECS
   * secrets, never in their environment. @default none: the crawlers fetch directly
   */
  proxiesSecret?: string;
  /** Overrides of runtime variables (names from lib/config/variables.ts) for every function and the fleet. */
  runtimeEnv: Partial<Record<VariableName, string>>;
}

/** The retention periods CloudWatch Logs accepts. */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

function retention(get: Get): number {
  const days = int(get, 'logRetentionDays', 30, 1, 3653);
  if (!LOG_RETENTION_DAYS.includes(days))
    throw new SettingsError('logRetentionDays', `must be one of ${LOG_RETENTION_DAYS.join(', ')}`);
  return days;
}

/** The task CPU sizes Fargate offers. */
const FARGATE_CPU = [256, 512, 1024, 2048, 4096, 8192, 16384];

function fargateCpu(get: Get, key: string, fallback: number): number {
  const cpu = int(get, key, fallback, 256, 16384);
  if (!FARGATE_CPU.includes(cpu))
    throw new SettingsError(key, 'must be a Fargate CPU size (256, 512, 1024, ... 16384)');
  return cpu;
}

/** `availabilityZones`: a list or a comma-separated string of zone names. */
function zones(get: Get): string[] | undefined {
  const v = get('availabilityZones');
  if (v === undefined) return undefined;
  const list = Array.isArray(v) ? v : typeof v === 'string' ? v.split(',').map((z) => z.trim()) : undefined;
  if (
    !list ||
    list.length < 2 ||
    list.length > 6 ||
    !list.every((z) => typeof z === 'string' && /^[a-z]{2}(-[a-z]+)+-\d[a-z]$/.test(z))
  )
    throw new SettingsError(
      'availabilityZones',
      `must be 2 to 6 zone names like us-east-1a (got ${JSON.stringify(v)})`,
    );
  if (new Set(list).size !== list.length) throw new SettingsError('availabilityZones', 'names a zone twice');
  return list as string[];
}

function runtimeEnv(get: Get): Partial<Record<VariableName, string>> {
  let v = get('runtimeEnv');
  if (v === undefined) return {};
  if (typeof v === 'string') v = JSON.parse(v);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new SettingsError('runtimeEnv', 'must be an object');
  const out: Partial<Record<VariableName, string>> = {};
  for (const [name, value] of Object.entries(v)) {
    if (!(name in VARIABLES))
      throw new SettingsError('runtimeEnv', `${name} is not a variable of lib/config/variables.ts`);
    if (name === 'REDIS_PASSWORD')
      throw new SettingsError('runtimeEnv', 'REDIS_PASSWORD is the AUTH token the stack keeps in Secrets Manager');
    if (name === 'CRAWLER_PROXIES' || name === 'CRAWLER_PROXY_GROUPS')
      throw new SettingsError('runtimeEnv', `${name} holds credentials: put it in the secret named by proxiesSecret`);
    out[name as VariableName] = String(value);
  }
  return out;
}

/**
 * The REST bound on requests in flight (REST_MAX_IN_FLIGHT of `runtimeEnv`, else its default), as a stage burst:
 * API Gateway admits that many requests at once before answering 429, as the local server answers 503.
 */
function restInFlight(env: Partial<Record<VariableName, string>>): number {
  const spec = VARIABLES.REST_MAX_IN_FLIGHT;
  const raw = env.REST_MAX_IN_FLIGHT;
  if (raw === undefined) return spec.default;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < spec.minimum || n > spec.maximum)
    throw new SettingsError(
      'runtimeEnv',
      `REST_MAX_IN_FLIGHT must be an integer in [${spec.minimum}, ${spec.maximum}] (got ${JSON.stringify(raw)})`,
    );
  // API Gateway's largest stage burst.
  return Math.min(n, 5000);
}

/**
 * Reads and validates the settings from a context source (an App's node, or a plain object in tests).
 * @throws SettingsError naming the first invalid key
 */
export function readSettings(source: Node | Record<string, unknown>): Settings {
  const given: Get =
    'tryGetContext' in source && typeof source.tryGetContext === 'function'
      ? (key) => (source as Node).tryGetContext(key)
      : (key) => (source as Record<string, unknown>)[key];
  const profile = str(given, 'profile', 'standard', /^(standard|small)$/) as Profile;
  const get: Get = (key) => given(key) ?? PROFILES[profile][key];

  const availabilityZones = zones(get);
  const maxAzs = int(get, 'maxAzs', availabilityZones?.length ?? 2, 2, 6);
  if (availabilityZones && availabilityZones.length !== maxAzs)
    throw new SettingsError('maxAzs', `must equal the number of availabilityZones (${availabilityZones.length})`);
  const crawlerImage =
    get('crawlerImage') === undefined
      ? undefined
      : str(
          get,
          'crawlerImage',
          '',
          /^[a-z0-9][a-z0-9.-]*(:\d+)?(\/[a-z0-9._-]+)+(:[\w.-]{1,128}|@sha256:[0-9a-f]{64})$/,
        );
  const kafka = str(get, 'kafka', 'serverless', /^(serverless|provisioned)$/) as Settings['kafka'];
  const kafkaBrokers = int(get, 'kafkaBrokers', maxAzs, maxAzs, 90);
  if (kafkaBrokers % maxAzs !== 0) throw new SettingsError('kafkaBrokers', `must be a multiple of maxAzs (${maxAzs})`);
  const minPollers = int(get, 'minPollers', 1, 1, 200);
  const maxPollers = int(get, 'maxPollers', 4, 1, 2000);
  if (maxPollers < minPollers) throw new SettingsError('maxPollers', 'must be at least minPollers');
  const env = runtimeEnv(get);
  if (env.FRONTIER_PARTITIONS !== undefined)
    throw new SettingsError(
      'runtimeEnv',
      'FRONTIER_PARTITIONS follows the cache shards and is set by the stack: use -c frontierPartitions=N',
    );
  const minTasks = int(get, 'minTasks', 0, 0, 1000);
  const maxTasks = int(get, 'maxTasks', 10, 1, 1000);
  if (maxTasks < minTasks) throw new SettingsError('maxTasks', 'must be at least minTasks');
  const taskCpu = fargateCpu(get, 'taskCpu', 1024);
  const concurrency = (key: string, name: 'CRAWLER_CONCURRENCY_MIN' | 'CRAWLER_CONCURRENCY_MAX') =>
    int(get, key, VARIABLES[name].default, VARIABLES[name].minimum, VARIABLES[name].maximum);
  const crawlerConcurrencyMin = concurrency('crawlerConcurrencyMin', 'CRAWLER_CONCURRENCY_MIN');
  const crawlerConcurrencyMax = concurrency('crawlerConcurrencyMax', 'CRAWLER_CONCURRENCY_MAX');
  if (crawlerConcurrencyMax < crawlerConcurrencyMin)
    throw new SettingsError('crawlerConcurrencyMax', 'must be at least crawlerConcurrencyMin');
  const urlFrontierMinTasks = int(get, 'urlFrontierMinTasks', 2, 1, 100);
  const urlFrontierMaxTasks = int(get, 'urlFrontierMaxTasks', 6, 1, 100);
  if (urlFrontierMaxTasks < urlFrontierMinTasks)
    throw new SettingsError('urlFrontierMaxTasks', 'must be at least urlFrontierMinTasks');
  const urlFrontierCertificateArn =
    get('urlFrontierCertificateArn') === undefined
      ? undefined
      : str(get, 'urlFrontierCertificateArn', '', /^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[0-9a-f-]+$/);
  const crawlerPlugins =
    get('crawlerPlugins') === undefined
      ? undefined
      : str(get, 'crawlerPlugins', '', /^(?!\/)(?!.*(?:^|\/)\.\.(?:\/|$))[A-Za-z0-9._/-]{1,200}$/);
  if (crawlerPlugins !== undefined && crawlerImage !== undefined)
    throw new SettingsError('crawlerPlugins', 'is built into the image, so it cannot go with a prebuilt crawlerImage');
  const proxiesSecret =
    get('proxiesSecret') === undefined
      ? undefined
      : str(
          get,
          'proxiesSecret',
          '',
          /^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]+-\w{6}|[\w/+=.@-]{1,512})$/,
        );
  const alarmEmail = get('alarmEmail') === undefined ? undefined : str(get, 'alarmEmail', '', /^[^@\s]+@[^@\s]+$/);

  return {
    profile,
    topicPrefix: str(
      get,
      'topicPrefix',
      VARIABLES.KAFKA_TOPIC_PREFIX.default,
      new RegExp(VARIABLES.KAFKA_TOPIC_PREFIX.pattern),
    ),
    topicPartitions: int(get, 'topicPartitions', VARIABLES.KAFKA_TOPIC_PARTITIONS.default, 1, 1000),
    maxAzs,
    availabilityZones,
    endpointAzs: int(get, 'endpointAzs', maxAzs, 1, maxAzs),
    crawlerPublicSubnets: bool(get, 'crawlerPublicSubnets', false),
    natGateways: int(get, 'natGateways', maxAzs, 1, maxAzs),
    kafka,
    kafkaVersion: str(get, 'kafkaVersion', '3.8.x', /^\d+\.\d+\.[\dx]+(\.[a-z0-9-]+)?$/),
    kafkaBrokers,
    kafkaInstanceType: str(get, 'kafkaInstanceType', 'kafka.m7g.large', /^kafka\.[a-z0-9]+\.[a-z0-9]+$/),
    kafkaVolumeGiB: int(get, 'kafkaVolumeGiB', 100, 1, 16384),
    retentionHours: int(get, 'retentionHours', 168, 1, 87_600),
    pagesPerMonth: get('pagesPerMonth') === undefined ? undefined : int(get, 'pagesPerMonth', 0, 1, 1e13),
    kafkaMonitoring: str(
      get,
      'kafkaMonitoring',
      'PER_TOPIC_PER_BROKER',
      /^(DEFAULT|PER_BROKER|PER_TOPIC_PER_BROKER|PER_TOPIC_PER_PARTITION)$/,
    ) as Settings['kafkaMonitoring'],
    eventSourceMode: str(
      get,
      'eventSourceMode',
      'provisioned',
      /^(provisioned|on-demand)$/,
    ) as Settings['eventSourceMode'],
    minPollers,
    maxPollers,
    ingestBatchSize: int(get, 'ingestBatchSize', 500, 1, 10_000),
    maxRecordAgeSec: int(get, 'maxRecordAgeSec', 3600, 60, 604_800),
    eventSourceRetryAttempts: int(get, 'eventSourceRetryAttempts', 10, 0, 10_000),
    bisectBatchOnError: bool(get, 'bisectBatchOnError', true),
    ...readCacheSettings(get),
    crawlerImage,
    containerInsights: bool(get, 'containerInsights', true),
    taskCpu,
    taskMemoryMiB: int(get, 'taskMemoryMiB', 2048, 512, 122_880),
    crawlerCapacity: str(get, 'crawlerCapacity', 'on-demand', /^(spot|on-demand)$/) as Settings['crawlerCapacity'],
    crawlerOnDemandBase: int(get, 'crawlerOnDemandBase', 0, 0, 1000),
    minTasks,
    maxTasks,
    crawlerConcurrencyMin,
    crawlerConcurrencyMax,
    // Fargate allows at most 120 s between SIGTERM and SIGKILL; keep 20 s for the producer flush and exit.
    shutdownDeadlineMs: int(get, 'shutdownDeadlineMs', 60_000, VARIABLES.SHUTDOWN_DEADLINE_MS.minimum, 100_000),
    restRateLimit: int(get, 'restRateLimit', 50, 1, 10_000),
    restBurstLimit: int(get, 'restBurstLimit', restInFlight(env), 1, 5000),
    bodyRetentionDays: int(get, 'bodyRetentionDays', 30, 1, 3650),
    failedBatchRetentionDays: int(get, 'failedBatchRetentionDays', 30, 1, 3650),
    logRetentionDays: retention(get),
    dashboard: bool(get, 'dashboard', true),
    alarmEmail,
    urlFrontier: bool(get, 'urlFrontier', true),
    urlFrontierTaskCpu: fargateCpu(get, 'urlFrontierTaskCpu', 512),
    urlFrontierTaskMemoryMiB: int(get, 'urlFrontierTaskMemoryMiB', 1024, 512, 122_880),
    urlFrontierMinTasks,
    urlFrontierMaxTasks,
    urlFrontierCertificateArn,
    createEcsServiceLinkedRole: bool(get, 'createEcsServiceLinkedRole', false),
    createAutoScalingServiceLinkedRole: bool(get, 'createAutoScalingServiceLinkedRole', false),
    crawlerPlugins,
    proxiesSecret,
    runtimeEnv: env,
  };
}
