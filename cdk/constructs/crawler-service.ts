/**
 * What the crawler fleet (./fleet.ts) and the browser fleet (./browser-fleet.ts) share: a Fargate service of crawler
 * processes (functions/crawler/main.ts) in the fleet's ECS cluster, with its arm64 task, its log group, a container
 * that gets the Kafka, Redis and body-store connection variables (with per-app topics on, KAFKA_TOPIC_PARTITIONS for
 * the topics its processes create on first use) and the Redis AUTH token (and the proxies, with context proxiesSecret)
 * as secrets, the task role's
 * rights (produce pages and replies, write bodies) and a deployment circuit breaker that rolls back. Each fleet brings
 * its own image, the variables of its own and its scaling policy.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { crawledAppTopic } from '../../lib/kafka/topics.ts';
import { acknowledge, acknowledgeRedisTask, wildcardResource } from '../nag.ts';
import { environment, type RuntimeEnv } from '../runtime-env.ts';
import type { Cache } from './cache.ts';
import type { Kafka } from './kafka.ts';
import type { Network } from './network.ts';
import type { Storage } from './storage.ts';

/**
 * SIGTERM to SIGKILL: the crawler's drain deadline plus time to flush the producer and exit; Fargate allows 120 s,
 * which is also the warning a Fargate Spot interruption gives.
 */
export function stopTimeoutSeconds(shutdownDeadlineMs: number): number {
  return Math.min(120, Math.ceil(shutdownDeadlineMs / 1000) + 20);
}

/** A Fargate task definition (`Task`) on arm64 Linux, as every task of the stack runs. */
export function arm64TaskDefinition(scope: Construct, cpu: number, memoryLimitMiB: number): ecs.FargateTaskDefinition {
  return new ecs.FargateTaskDefinition(scope, 'Task', {
    cpu,
    memoryLimitMiB,
    runtimePlatform: {
      cpuArchitecture: ecs.CpuArchitecture.ARM64,
      operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
    },
  });
}

/** A task's log group (`Logs`), removed with the stack. */
export function taskLogGroup(scope: Construct, retention: logs.RetentionDays): logs.LogGroup {
  return new logs.LogGroup(scope, 'Logs', { retention, removalPolicy: RemovalPolicy.DESTROY });
}

export interface CrawlerServiceProps {
  network: Network;
  kafka: Kafka;
  cache: Cache;
  storage: Storage;
  cluster: ecs.ICluster;
  /** ECS's service-linked role when the stack creates it: the service depends on it. */
  serviceLinkedRole?: iam.CfnServiceLinkedRole;
  taskCpu: number;
  taskMemoryMiB: number;
  /** The tasks a deploy sets (minTasks); the scaling policy starts the others. */
  minTasks: number;
  shutdownDeadlineMs: number;
  logRetention: logs.RetentionDays;
  runtimeEnv: RuntimeEnv;
  /** The container's name, also its log stream prefix. */
  containerName: string;
  image: ecs.ContainerImage;
  /** KAFKA_CLIENT_ID of its processes. */
  kafkaClientId: string;
  /** The variables of this fleet's own, set by the stack (on top of the connection variables). */
  environment: RuntimeEnv;
  /** Who writes the bodies, for cdk-nag's acknowledgement of the bucket-wide write. */
  bodyWriters: string;
  /** The secret holding CRAWLER_PROXIES and CRAWLER_PROXY_GROUPS (context proxiesSecret): its name or complete ARN. */
  proxiesSecret?: string;
  /** Capacity providers (Fargate Spot) instead of the Fargate launch type. @default the Fargate launch type */
  capacityProviderStrategies?: ecs.CapacityProviderStrategy[];
}

/** The ECS secrets of the proxy variables, read from the JSON keys of the same names of the secret `nameOrArn`. */
function proxySecrets(scope: Construct, nameOrArn: string): Record<string, ecs.Secret> {
  const secret = nameOrArn.startsWith('arn:')
    ? secretsmanager.Secret.fromSecretCompleteArn(scope, 'ProxiesSecret', nameOrArn)
    : secretsmanager.Secret.fromSecretNameV2(scope, 'ProxiesSecret', nameOrArn);
  return {
    CRAWLER_PROXIES: ecs.Secret.fromSecretsManager(secret, 'CRAWLER_PROXIES'),
    CRAWLER_PROXY_GROUPS: ecs.Secret.fromSecretsManager(secret, 'CRAWLER_PROXY_GROUPS'),
  };
}

/** The task definition, its container and the service (construct ids `Task`, `Logs`, `Service`) under `scope`. */
export function crawlerService(
  scope: Construct,
  props: CrawlerServiceProps,
): { taskDefinition: ecs.FargateTaskDefinition; service: ecs.FargateService } {
  const { network, kafka, cache, storage } = props;
  const taskDefinition = arm64TaskDefinition(scope, props.taskCpu, props.taskMemoryMiB);
  const logGroup = taskLogGroup(scope, props.logRetention);
  const appTopics = props.runtimeEnv.KAFKA_APPID_TOPICS === 'true';
  taskDefinition.addContainer(props.containerName, {
    image: props.image,
    essential: true,
    logging: ecs.LogDrivers.awsLogs({ streamPrefix: props.containerName, logGroup }),
    environment: environment(
      {
        KAFKA_BROKERS: kafka.bootstrapBrokers,
        KAFKA_TOPIC_PREFIX: kafka.topicPrefix,
        KAFKA_SASL_MECHANISM: 'aws-msk-iam',
        KAFKA_SSL: 'true',
        KAFKA_CLIENT_ID: props.kafkaClientId,
        // With per-app topics, a new app's topics are created on first use with the partitions of the others.
        ...(appTopics ? { KAFKA_TOPIC_PARTITIONS: String(kafka.topicPartitions) } : {}),
        ...cache.clientEnvironment,
        BODY_STORE_BUCKET: storage.bodies.bucketName,
        SHUTDOWN_DEADLINE_MS: String(props.shutdownDeadlineMs),
        // The task size: the crawler's memory limit (and its body budget) even where its cgroup does not show it.
        CRAWLER_TASK_MEMORY_MIB: String(props.taskMemoryMiB),
        ...props.environment,
        AWS_REGION: Stack.of(scope).region,
      },
      props.runtimeEnv,
    ),
    // Injected by the ECS agent at start; never in the task definition. The proxies' credentials too.
    secrets: {
      REDIS_PASSWORD: ecs.Secret.fromSecretsManager(cache.authToken),
      ...(props.proxiesSecret === undefined ? {} : proxySecrets(scope, props.proxiesSecret)),
    },
    stopTimeout: Duration.seconds(stopTimeoutSeconds(props.shutdownDeadlineMs)),
  });
  acknowledgeRedisTask(taskDefinition);

  const taskRole = taskDefinition.taskRole;
  kafka.grantProduce(taskRole, [
    kafka.topics.crawledFirehose,
    kafka.topics.outboundFirehose,
    ...(appTopics ? [crawledAppTopic(kafka.topicPrefix, '*')] : []),
  ]);
  iam.Grant.addToPrincipal({
    grantee: taskRole,
    actions: ['s3:PutObject', 's3:AbortMultipartUpload'],
    resourceArns: [storage.bodies.arnForObjects('*')],
  });
  acknowledge(
    taskRole,
    wildcardResource(scope, storage.bodies.arnForObjects('*')),
    `${props.bodyWriters} write bodies under keys derived from the page (any key in the body bucket, write only).`,
  );

  const service = new ecs.FargateService(scope, 'Service', {
    cluster: props.cluster,
    taskDefinition,
    // The first deploy starts no task (CloudFormation would start 1, and with the circuit breaker one bad start
    // would roll the whole stack back): the scaling policy starts a crawler once requests are queued.
    // CloudFormation sends the count again with every update of the service (a new image, say), which takes the
    // fleet back to minTasks until the policy scales it out again, a few minutes later.
    desiredCount: props.minTasks,
    circuitBreaker: { enable: true, rollback: true },
    minHealthyPercent: 100,
    maxHealthyPercent: 200,
    assignPublicIp: network.crawlerPublicIp,
    vpcSubnets: network.crawlerSubnets,
    securityGroups: [network.crawlerSecurityGroup],
    propagateTags: ecs.PropagatedTagSource.SERVICE,
    enableExecuteCommand: false,
    ...(props.capacityProviderStrategies ? { capacityProviderStrategies: props.capacityProviderStrategies } : {}),
  });
  service.node.addDependency(kafka.topicsResource);
  if (props.serviceLinkedRole) service.node.addDependency(props.serviceLinkedRole);
  return { taskDefinition, service };
}
