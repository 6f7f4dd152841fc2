/**
 * The Lambda functions (docs/design.md §2): kafka-monitor and redis-monitor on MSK event sources, expire, stats and
 * reclaim on EventBridge Scheduler every minute. Each role holds only the Kafka topics and groups its function
 * uses. And rest, the REST API's function (its HTTP API is ./rest-api.ts).
 */
import { Duration, type IResolveContext, Lazy, Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { ManagedKafkaEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { REDIS_PASSWORD_SECRET_ARN } from '../../functions/shared/secrets.ts';
import { VARIABLES, type VariableName } from '../../lib/config/variables.ts';
import { outboundAppTopic } from '../../lib/kafka/topics.ts';
import { SettingsError } from '../context-values.ts';
import { acknowledge, wildcardResource } from '../nag.ts';
import { environment, type RuntimeEnv } from '../runtime-env.ts';
import type { Cache } from './cache.ts';
import { CrawlFunction } from './crawl-function.ts';
import type { Kafka } from './kafka.ts';
import type { Network } from './network.ts';
import type { Storage } from './storage.ts';

/** The variable telling the MSK-triggered functions their event sources' mode (functions/shared/msk.ts batchResult). */
const MSK_EVENT_SOURCE_MODE = 'MSK_EVENT_SOURCE_MODE' satisfies VariableName;

export interface FunctionsProps {
  network: Network;
  kafka: Kafka;
  cache: Cache;
  storage: Storage;
  ingestBatchSize: number;
  /** See cdk/settings.ts. */
  eventSourceMode: 'provisioned' | 'on-demand';
  minPollers: number;
  maxPollers: number;
  /** See cdk/settings.ts. */
  maxRecordAgeSec: number;
  /** See cdk/settings.ts. */
  eventSourceRetryAttempts: number;
  /** See cdk/settings.ts. */
  bisectBatchOnError: boolean;
  /** See cdk/settings.ts: REDIS_PASSWORD in the environment instead of the secret read at cold start. */
  redisTokenInEnvironment?: boolean;
  logRetention: logs.RetentionDays;
  runtimeEnv: RuntimeEnv;
}

/** The deployables that run on a schedule, with their purpose (the schedule's description). */
const SCHEDULED = {
  expire: 'stops crawls whose expires has passed',
  stats: 'publishes backlog and fleet metrics (fleet autoscaling signal)',
  reclaim: 'returns requests leased by dead crawlers to their queues',
} as const;

export type ScheduledName = keyof typeof SCHEDULED;

/**
 * What the REST function may spend on one request beyond waiting for a reply (WAIT_FOR_RESPONSE_TIME): the
 * Kafka send bound (10 s), a Redis round trip (2 s) and margin (lib/rest/context.ts RestOptions).
 */
const REST_OVERHEAD_SECONDS = 15;

/** The longest integration timeout of an HTTP API (aws-cdk-lib: 29 s); the function must answer before it. */
export const HTTP_API_INTEGRATION_LIMIT_SECONDS = 29;

/** The REST function's timeout for a WAIT_FOR_RESPONSE_TIME (seconds): 20 s at the default 5 s. */
function restTimeoutSeconds(waitForResponseTime: number): number {
  return waitForResponseTime + REST_OVERHEAD_SECONDS;
}

export class Functions extends Construct {
  readonly kafkaMonitor: CrawlFunction;
  readonly redisMonitor: CrawlFunction;
  readonly scheduled: Record<ScheduledName, CrawlFunction>;
  /** The REST API's function (API Gateway HTTP API, payload format 2.0; see ./rest-api.ts). */
  readonly rest: CrawlFunction;
  /** Every function, for the dashboard and alarms. */
  readonly all: { name: string; fn: CrawlFunction }[];
  /** Consumer groups of the MSK event sources, by function. */
  readonly consumerGroups: { kafkaMonitor: string; redisMonitor: string };
  /**
   * An MSK event source like the monitors' (error handling, poller group, failed batches to the failed-batch bucket),
   * for another function on the cluster (./sink.ts).
   */
  readonly mskEventSource: (
    topic: string,
    group: string,
    batchSize: number,
    window: Duration,
  ) => ManagedKafkaEventSource;

  constructor(scope: Construct, id: string, props: FunctionsProps) {
    super(scope, id);
    const { network, kafka, cache, storage } = props;
    // Scrapy Cluster's per-app topics (KAFKA_APPID_TOPICS) are named by appid at run time: allow the pattern.
    const appTopics = props.runtimeEnv.KAFKA_APPID_TOPICS === 'true';
    const outbound = [kafka.topics.outboundFirehose, ...(appTopics ? [outboundAppTopic(kafka.topicPrefix, '*')] : [])];
    const tokenInEnv = props.redisTokenInEnvironment ?? false;
    if (!tokenInEnv)
      network.allowSecretsManager(network.functionsSecurityGroup, 'functions: the Redis AUTH token at cold start');
    // Either the secret's ARN, read at cold start (functions/shared/secrets.ts), so that the token is neither in the
    // function's configuration nor stale after a rotation; or, with redisTokenInEnvironment, the token itself as a
    // CloudFormation dynamic reference resolved at deploy (no Secrets Manager call, so no endpoint), readable by
    // whoever may read the function's configuration and changed only by a deploy that updates the function.
    const redisAuth: Record<string, string> = tokenInEnv
      ? { REDIS_PASSWORD: cache.authToken.secretValue.unsafeUnwrap() }
      : { [REDIS_PASSWORD_SECRET_ARN]: cache.authToken.secretArn };

    const make = (
      name: string,
      description: string,
      timeout: Duration,
      memorySize = 512,
      env: RuntimeEnv = {},
      usesKafka = true,
    ) => {
      const kafkaEnv: RuntimeEnv = usesKafka
        ? {
            KAFKA_BROKERS: kafka.bootstrapBrokers,
            KAFKA_TOPIC_PREFIX: kafka.topicPrefix,
            KAFKA_SASL_MECHANISM: 'aws-msk-iam',
            KAFKA_SSL: 'true',
            KAFKA_CLIENT_ID: `crawl-cluster-${name}`,
            // A new app's per-app topics are created on first use with the partitions of the others.
            ...(appTopics ? { KAFKA_TOPIC_PARTITIONS: String(kafka.topicPartitions) } : {}),
          }
        : {};
      const fn = new CrawlFunction(this, pascal(name), {
        name,
        description: `crawl-cluster ${name}: ${description}`,
        timeout,
        memorySize,
        environment: {
          ...environment(
            {
              ...kafkaEnv,
              ...cache.clientEnvironment,
            },
            { ...env, ...props.runtimeEnv },
          ),
          ...redisAuth,
          POWERTOOLS_SERVICE_NAME: name,
          POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        },
        vpc: network.vpc,
        subnets: network.privateSubnets,
        securityGroups: [network.functionsSecurityGroup],
        logRetention: props.logRetention,
      });
      // Its own secret only, and reading its value only.
      if (!tokenInEnv)
        iam.Grant.addToPrincipal({
          grantee: fn.function,
          actions: ['secretsmanager:GetSecretValue'],
          resourceArns: [cache.authToken.secretArn],
        });
      // A function that uses Kafka opens an idempotent producer at cold start (functions/shared/deps.ts); stats and
      // reclaim use Redis only, get no Kafka settings or rights, and go on through an MSK fault.
      if (usesKafka) {
        kafka.grantProduce(fn.function, []);
        fn.node.addDependency(kafka.topicsResource);
      }
      return fn;
    };

    this.consumerGroups = {
      kafkaMonitor: `${kafka.topicPrefix}.kafka-monitor`,
      redisMonitor: `${kafka.topicPrefix}.redis-monitor`,
    };
    // The mappings (the sink's too) share one poller group, so their minimum pollers share Event Poller Units.
    const pollerGroupName = `${Stack.of(this).stackName}-monitors`.slice(0, 128);
    const provisioned = props.eventSourceMode === 'provisioned';
    // Error handling controls need provisioned pollers: without ReportBatchItemFailures Lambda would ignore the
    // handlers' batchItemFailures answer and commit records that failed on a Redis or Kafka outage. A failing batch
    // is retried (split in halves, to isolate a record that crashes the function) until either bound is reached;
    // then it goes to the failed-batch bucket, for replay, and the FailedBatches alarm fires. Poison never fails a
    // batch (the handlers answer it with a rejection), so what lands there is an outage of Redis or Kafka longer than
    // the bounds: the partition waits that long at most. On-demand pollers have none of these controls: the handlers
    // throw on a failed record (MSK_EVENT_SOURCE_MODE, functions/shared/msk.ts batchResult) and Lambda retries the
    // whole batch until it succeeds or its records age out of the topic, to the failed-batch bucket then.
    const errorHandling = provisioned
      ? {
          provisionedPollerConfig: {
            minimumPollers: props.minPollers,
            maximumPollers: props.maxPollers,
            pollerGroupName,
          },
          reportBatchItemFailures: true,
          bisectBatchOnError: props.bisectBatchOnError,
          retryAttempts: props.eventSourceRetryAttempts,
          maxRecordAge: Duration.seconds(props.maxRecordAgeSec),
        }
      : {};
    if (!provisioned) network.allowEventSourcePollers(kafka.securityGroup);
    const eventSource = (topic: string, group: string, batchSize: number, window: Duration) =>
      new ManagedKafkaEventSource({
        clusterArn: kafka.clusterArn,
        topic,
        consumerGroupId: group,
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize,
        maxBatchingWindow: window,
        ...errorHandling,
        onFailure: new FailedBatchBucket(storage.failedBatches),
      });
    this.mskEventSource = eventSource;

    this.kafkaMonitor = make(
      'kafka-monitor',
      'parses, validates and routes incoming requests',
      Duration.seconds(60),
      1024,
    );
    if (!provisioned) this.kafkaMonitor.function.addEnvironment(MSK_EVENT_SOURCE_MODE, props.eventSourceMode);
    kafka.grantConsume(this.kafkaMonitor.function, kafka.topics.incoming, this.consumerGroups.kafkaMonitor);
    kafka.grantProduce(this.kafkaMonitor.function, [kafka.topics.actions, kafka.topics.rejected, ...outbound]);
    this.kafkaMonitor.function.addEventSource(
      eventSource(kafka.topics.incoming, this.consumerGroups.kafkaMonitor, props.ingestBatchSize, Duration.seconds(1)),
    );

    this.redisMonitor = make('redis-monitor', 'info, stop, stats and domain configuration', Duration.seconds(60));
    if (!provisioned) this.redisMonitor.function.addEnvironment(MSK_EVENT_SOURCE_MODE, props.eventSourceMode);
    kafka.grantConsume(this.redisMonitor.function, kafka.topics.actions, this.consumerGroups.redisMonitor);
    kafka.grantProduce(this.redisMonitor.function, outbound);
    this.redisMonitor.function.addEventSource(
      eventSource(kafka.topics.actions, this.consumerGroups.redisMonitor, 100, Duration.seconds(0)),
    );

    for (const m of [this.kafkaMonitor, this.redisMonitor]) {
      mskEventSourceGrants(m.role, kafka.clusterArn);
      acknowledge(
        m.role,
        wildcardResource(this, storage.failedBatches.arnForObjects('*')),
        'Lambda names the objects of failed batches itself (on-failure destination of the MSK event source).',
      );
    }

    // One role for the three schedules; LambdaInvoke grants it invoke on each function (and its versions).
    const schedulerRole = new iam.Role(this, 'SchedulerRole', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: 'crawl-cluster schedules: invoke expire, stats and reclaim',
    });
    this.scheduled = {} as Record<ScheduledName, CrawlFunction>;
    for (const [name, description] of Object.entries(SCHEDULED) as [ScheduledName, string][]) {
      // Ends before the next run starts.
      const fn = make(name, description, Duration.seconds(50), 512, {}, name === 'expire');
      if (name === 'expire') kafka.grantProduce(fn.function, outbound);
      new Schedule(this, `${pascal(name)}Schedule`, {
        schedule: ScheduleExpression.rate(Duration.minutes(1)),
        description: `crawl-cluster ${name}: ${description}`,
        // The next run a minute later supersedes a failed one, so no retries and no dead-letter queue.
        target: new LambdaInvoke(fn.function, {
          role: schedulerRole,
          retryAttempts: 0,
          maxEventAge: Duration.minutes(1),
        }),
      });
      acknowledge(
        schedulerRole,
        wildcardResource(this, `${fn.function.functionArn}:*`),
        "aws-cdk-lib's LambdaInvoke target grants invoke on the function's versions too; nothing else.",
      );
      this.scheduled[name] = fn;
    }

    // rest: produces requests to <prefix>.incoming (the kafka-monitor validates and routes them), reads replies
    // and stats from Redis. Its timeout covers the reply wait plus the Kafka and Redis bounds.
    const wait = waitForResponseTime(props.runtimeEnv);
    this.rest = make(
      'rest',
      'REST API (feed, poll, health, web dashboard) behind the HTTP API',
      Duration.seconds(restTimeoutSeconds(wait)),
      512,
      { WAIT_FOR_RESPONSE_TIME: String(wait) },
    );
    kafka.grantProduce(this.rest.function, [kafka.topics.incoming]);

    this.all = [
      { name: 'kafka-monitor', fn: this.kafkaMonitor },
      { name: 'redis-monitor', fn: this.redisMonitor },
      ...Object.entries(this.scheduled).map(([name, fn]) => ({ name, fn })),
      { name: 'rest', fn: this.rest },
    ];
  }
}

/**
 * WAIT_FOR_RESPONSE_TIME of the REST function (context runtimeEnv, else the runtime default), bounded so the
 * function answers within the HTTP API's integration limit.
 */
function waitForResponseTime(runtimeEnv: RuntimeEnv): number {
  const spec = VARIABLES.WAIT_FOR_RESPONSE_TIME;
  const raw = runtimeEnv.WAIT_FOR_RESPONSE_TIME;
  const wait = raw === undefined ? spec.default : Number(raw);
  const max = HTTP_API_INTEGRATION_LIMIT_SECONDS - 1 - REST_OVERHEAD_SECONDS;
  if (!Number.isInteger(wait) || wait < spec.minimum || wait > max)
    throw new SettingsError(
      'runtimeEnv',
      `WAIT_FOR_RESPONSE_TIME must be an integer in [${spec.minimum}, ${max}] on AWS: the REST function needs ` +
        `${REST_OVERHEAD_SECONDS} s more than it, and API Gateway ends a request after ${HTTP_API_INTEGRATION_LIMIT_SECONDS} s`,
    );
  return wait;
}

/** The AWS managed policy aws-cdk-lib's ManagedKafkaEventSource attaches to the function's role. */
export const MSK_EXECUTION_POLICY = 'AWSLambdaMSKExecutionRole';

/**
 * What an MSK event source needs on the function's role besides the kafka-cluster data-plane actions (granted by
 * Kafka.grantConsume) and the Lambda VPC actions of every function (CrawlFunction), instead of the
 * AWSLambdaMSKExecutionRole managed policy, which allows them, logs:* included, on every resource: the cluster's
 * description and bootstrap brokers on this cluster only, and the two EC2 describes the pollers' network
 * interfaces need. The managed policy is taken off the role again.
 */
export function mskEventSourceGrants(role: iam.Role, clusterArn: string): void {
  iam.Grant.addToPrincipal({
    grantee: role,
    actions: ['kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'],
    resourceArns: [clusterArn],
  });
  iam.Grant.addToPrincipal({
    grantee: role,
    actions: ['ec2:DescribeVpcs', 'ec2:DescribeSecurityGroups'],
    resourceArns: ['*'],
  });
  const cfn = role.node.defaultChild as iam.CfnRole;
  const attached = cfn.managedPolicyArns;
  cfn.managedPolicyArns = Token.asList(
    Lazy.uncachedAny({
      produce: (context: IResolveContext) => {
        const kept = ((context.resolve(attached) ?? []) as unknown[]).filter(
          (arn) => !JSON.stringify(arn).includes(`/${MSK_EXECUTION_POLICY}`),
        );
        return kept.length > 0 ? kept : undefined;
      },
    }),
  );
}

function pascal(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, _d, c: string) => c.toUpperCase());
}

/**
 * The failed-batch bucket as an MSK event source on-failure destination, with only the permissions Lambda
 * documents for it (s3:PutObject, s3:ListBucket) instead of aws-cdk-lib's read-write grant.
 */
class FailedBatchBucket implements lambda.IEventSourceDlq {
  readonly #bucket: s3.IBucket;

  constructor(bucket: s3.IBucket) {
    this.#bucket = bucket;
  }

  bind(_target: lambda.IEventSourceMapping, targetHandler: lambda.IFunction): lambda.DlqDestinationConfig {
    iam.Grant.addToPrincipal({
      grantee: targetHandler,
      actions: ['s3:PutObject'],
      resourceArns: [this.#bucket.arnForObjects('*')],
    });
    iam.Grant.addToPrincipal({
      grantee: targetHandler,
      actions: ['s3:ListBucket'],
      resourceArns: [this.#bucket.bucketArn],
    });
    return { destination: this.#bucket.bucketArn };
  }
}
