/**
 * The crawl-cluster stack: composes one construct per concern (docs/style.md) and nothing else.
 */
import { Annotations, CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { BrowserFleet, browserFleetSettings } from './constructs/browser-fleet.ts';
import { Cache } from './constructs/cache.ts';
import { Fleet } from './constructs/fleet.ts';
import { Functions } from './constructs/functions.ts';
import { firehosePartitionsNeeded, Kafka } from './constructs/kafka.ts';
import { Network } from './constructs/network.ts';
import { Observability } from './constructs/observability.ts';
import { RestApi } from './constructs/rest-api.ts';
import { Storage } from './constructs/storage.ts';
import { UrlFrontier } from './constructs/url-frontier.ts';
import { COMPRESSION_RATIO } from './prices.ts';
import { AWS_FLEET_DEFAULTS } from './runtime-env.ts';
import type { Settings } from './settings.ts';

/** The page size partitions are sized for (KB): an article page of the crawl bench. */
const REFERENCE_PAGE_KB = 28;

export interface CrawlClusterStackProps extends StackProps {
  settings: Settings;
}

export class CrawlClusterStack extends Stack {
  readonly network: Network;
  readonly kafka: Kafka;
  readonly cache: Cache;
  readonly storage: Storage;
  readonly functions: Functions;
  readonly fleet: Fleet;
  /** The browser fleet (docs/spiders-browser.md); undefined unless `browserFleet=true`. */
  readonly browserFleet?: BrowserFleet;
  readonly restApi: RestApi;
  /** The URL Frontier gRPC service; undefined with `urlFrontier=false`. */
  readonly urlFrontier?: UrlFrontier;
  readonly observability: Observability;
  /** Application Auto Scaling's role for ECS, with createAutoScalingServiceLinkedRole. */
  readonly autoScalingServiceLinkedRole?: iam.CfnServiceLinkedRole;

  constructor(scope: Construct, id: string, props: CrawlClusterStackProps) {
    super(scope, id, props);
    const s = props.settings;
    const logRetention = s.logRetentionDays as RetentionDays;

    this.network = new Network(this, 'Network', {
      maxAzs: s.maxAzs,
      availabilityZones: s.availabilityZones,
      endpointAzs: s.endpointAzs,
      natGateways: s.natGateways,
      crawlerPublicSubnets: s.crawlerPublicSubnets,
      logRetention,
    });
    const clients = [this.network.functionsSecurityGroup, this.network.crawlerSecurityGroup];
    const topicPartitions = this.#partitions(s);
    this.kafka = new Kafka(this, 'Kafka', {
      network: this.network,
      mode: s.kafka,
      kafkaVersion: s.kafkaVersion,
      brokers: s.kafkaBrokers,
      instanceType: s.kafkaInstanceType,
      volumeGiB: s.kafkaVolumeGiB,
      monitoring: s.kafkaMonitoring,
      topicPrefix: s.topicPrefix,
      topicPartitions,
      clients,
      logRetention,
    });
    this.cache = new Cache(this, 'Cache', {
      network: this.network,
      clients,
      nodeType: s.cacheNodeType,
      engineVersion: s.cacheEngineVersion,
      clusterMode: s.cacheClusterMode,
      shards: s.cacheShards,
      replicas: s.cacheReplicas,
      frontierPartitions: s.frontierPartitions,
      port: s.cachePort,
      snapshotRetentionDays: s.cacheSnapshotRetentionDays,
      logRetention,
    });
    this.storage = new Storage(this, 'Storage', {
      bodyRetentionDays: s.bodyRetentionDays,
      failedBatchRetentionDays: s.failedBatchRetentionDays,
    });
    this.functions = new Functions(this, 'Functions', {
      network: this.network,
      kafka: this.kafka,
      cache: this.cache,
      storage: this.storage,
      ingestBatchSize: s.ingestBatchSize,
      eventSourceMode: s.eventSourceMode,
      minPollers: s.minPollers,
      maxPollers: s.maxPollers,
      maxRecordAgeSec: s.maxRecordAgeSec,
      eventSourceRetryAttempts: s.eventSourceRetryAttempts,
      bisectBatchOnError: s.bisectBatchOnError,
      redisTokenInEnvironment: s.redisTokenInEnvironment,
      logRetention,
      runtimeEnv: s.runtimeEnv,
    });
    this.restApi = new RestApi(this, 'RestApi', {
      fn: this.functions.rest,
      rateLimit: s.restRateLimit,
      burstLimit: s.restBurstLimit,
      logRetention,
    });
    this.fleet = new Fleet(this, 'Fleet', {
      network: this.network,
      kafka: this.kafka,
      cache: this.cache,
      storage: this.storage,
      taskCpu: s.taskCpu,
      taskMemoryMiB: s.taskMemoryMiB,
      minTasks: s.minTasks,
      maxTasks: s.maxTasks,
      crawlerConcurrencyMin: s.crawlerConcurrencyMin,
      crawlerConcurrencyMax: s.crawlerConcurrencyMax,
      shutdownDeadlineMs: s.shutdownDeadlineMs,
      createEcsServiceLinkedRole: s.createEcsServiceLinkedRole,
      crawlerPlugins: s.crawlerPlugins,
      crawlerImage: s.crawlerImage,
      containerInsights: s.containerInsights,
      proxiesSecret: s.proxiesSecret,
      logRetention,
      runtimeEnv: { ...AWS_FLEET_DEFAULTS, ...s.runtimeEnv },
    });
    const { enabled: browserFleet, ...browser } = browserFleetSettings(this.node);
    if (browserFleet) {
      const { network, kafka, cache, storage, fleet } = this;
      const shared = { network, kafka, cache, storage, fleet, shutdownDeadlineMs: s.shutdownDeadlineMs, logRetention };
      this.browserFleet = new BrowserFleet(this, 'BrowserFleet', {
        ...browser,
        ...shared,
        runtimeEnv: s.runtimeEnv,
        proxiesSecret: s.proxiesSecret,
      });
    }
    if (s.urlFrontier) {
      this.urlFrontier = new UrlFrontier(this, 'UrlFrontier', {
        network: this.network,
        cache: this.cache,
        storage: this.storage,
        cluster: this.fleet.cluster,
        image: this.fleet.image,
        serviceLinkedRole: this.fleet.serviceLinkedRole,
        taskCpu: s.urlFrontierTaskCpu,
        taskMemoryMiB: s.urlFrontierTaskMemoryMiB,
        minTasks: s.urlFrontierMinTasks,
        maxTasks: s.urlFrontierMaxTasks,
        certificateArn: s.urlFrontierCertificateArn,
        logRetention,
        runtimeEnv: s.runtimeEnv,
      });
    }
    if (s.createAutoScalingServiceLinkedRole) {
      // The scalable targets name AWSServiceRoleForApplicationAutoScaling_ECSService; an account that never
      // autoscaled an ECS service lacks it and registering them fails. Kept on deletion, like the ECS one.
      const role = new iam.CfnServiceLinkedRole(this, 'AutoScalingServiceLinkedRole', {
        awsServiceName: 'ecs.application-autoscaling.amazonaws.com',
        description: 'Application Auto Scaling for ECS (created by crawl-cluster for a fresh account)',
      });
      role.applyRemovalPolicy(RemovalPolicy.RETAIN);
      // A scalable target depends on its service: the services wait for the role.
      this.fleet.service.node.addDependency(role);
      this.urlFrontier?.service.node.addDependency(role);
      this.autoScalingServiceLinkedRole = role;
    }
    this.observability = new Observability(this, 'Observability', {
      kafka: this.kafka,
      cache: this.cache,
      functions: this.functions,
      fleet: this.fleet,
      restApi: this.restApi,
      storage: this.storage,
      urlFrontier: this.urlFrontier,
      alarmEmail: s.alarmEmail,
      containerInsights: s.containerInsights,
      dashboard: s.dashboard,
    });

    new CfnOutput(this, 'BootstrapBrokers', {
      value: this.kafka.bootstrapBrokers,
      description: 'KAFKA_BROKERS for the CLI (KAFKA_SASL_MECHANISM=aws-msk-iam)',
    });
    new CfnOutput(this, 'TopicPrefix', { value: s.topicPrefix, description: 'KAFKA_TOPIC_PREFIX' });
    new CfnOutput(this, 'FrontierPartitions', {
      value: String(s.frontierPartitions),
      description: 'FRONTIER_PARTITIONS of every function and task: give the CLI the same when it uses the frontier',
    });
    new CfnOutput(this, 'RestApiUrl', {
      value: this.restApi.url,
      description: 'REST API endpoint (IAM authorization: SigV4-signed requests, service execute-api)',
    });
    new CfnOutput(this, 'RestApiInvokePolicy', {
      value: this.restApi.invokePolicy.managedPolicyArn,
      description: 'Managed policy to attach to whoever calls the REST API',
    });
    new CfnOutput(this, 'BodyBucket', { value: this.storage.bodies.bucketName, description: 'BODY_STORE_BUCKET' });
    new CfnOutput(this, 'FailedBatchBucket', {
      value: this.storage.failedBatches.bucketName,
      description: 'MSK batches the monitors could not process, for replay',
    });
    if (s.dashboard) new CfnOutput(this, 'DashboardUrl', { value: this.observability.dashboardUrl() });
    new CfnOutput(this, 'AlarmTopic', { value: this.observability.alarmTopic.topicArn });
    if (this.urlFrontier) {
      new CfnOutput(this, 'UrlFrontierEndpoint', {
        value: this.urlFrontier.endpoint,
        description: 'URL Frontier gRPC API (host:port, plaintext) for clients in the VPC (internal NLB)',
      });
      if (this.urlFrontier.tlsEndpoint)
        new CfnOutput(this, 'UrlFrontierTlsEndpoint', {
          value: this.urlFrontier.tlsEndpoint,
          description: 'URL Frontier gRPC API over TLS; connect by a DNS name of the certificate that points here',
        });
    }
  }

  /**
   * Partitions per topic: topicPartitions, raised on MSK Serverless to what the crawled firehose needs so that
   * maxTasks crawlers at their peak are not capped by its 5 MB/s per partition (a warning says so when it raises a
   * value given explicitly). Provisioned brokers have no per-partition limit.
   */
  #partitions(s: Settings): number {
    if (s.kafka !== 'serverless') return s.topicPartitions;
    const codec = s.runtimeEnv.KAFKA_COMPRESSION ?? AWS_FLEET_DEFAULTS.KAFKA_COMPRESSION ?? 'none';
    const needed = firehosePartitionsNeeded(s.maxTasks, REFERENCE_PAGE_KB, COMPRESSION_RATIO[codec] ?? 1);
    if (s.topicPartitions >= needed) return s.topicPartitions;
    if (this.node.tryGetContext('topicPartitions') !== undefined)
      Annotations.of(this).addWarningV2(
        'crawl-cluster:firehosePartitions',
        `topicPartitions=${s.topicPartitions} raised to ${needed}: ${s.maxTasks} crawler tasks at their peak ` +
          `(${REFERENCE_PAGE_KB} KB pages, ${codec}) publish more than ${s.topicPartitions} partitions x 5 MB/s take ` +
          'on MSK Serverless (docs/cost.md)',
      );
    return needed;
  }
}
