/**
 * The crawl-cluster stack: composes one construct per concern (docs/style.md) and nothing else.
 */
import { Annotations, CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { VARIABLES } from '../lib/config/variables.ts';
import { BrowserFleet, browserFleetSettings } from './constructs/browser-fleet.ts';
import { Cache } from './constructs/cache.ts';
import { Fleet } from './constructs/fleet.ts';
import { Functions } from './constructs/functions.ts';
import { Kafka } from './constructs/kafka.ts';
import { Network } from './constructs/network.ts';
import { Observability } from './constructs/observability.ts';
import { RestApi } from './constructs/rest-api.ts';
import { Sink, sinkSettings } from './constructs/sink.ts';
import { Storage } from './constructs/storage.ts';
import { UrlFrontier } from './constructs/url-frontier.ts';
import {
  BROKER_STORAGE_FILL,
  brokerVolumeGiBNeeded,
  firehosePartitionsNeeded,
  MSK_SERVERLESS_MAX_PARTITION_BYTES,
  MSK_SERVERLESS_MAX_PARTITIONS,
  messageBytes,
  pagesPerMonthHeld,
  REFERENCE_PAGE_KB,
  replicationFactor,
  retainedBytes,
} from './kafka-sizing.ts';
import { COMPRESSION_RATIO } from './prices.ts';
import { AWS_FLEET_DEFAULTS, type RuntimeEnv } from './runtime-env.ts';
import type { Settings } from './settings.ts';

/** Fixed topics besides the crawled firehose (incoming, outbound_firehose, actions, rejected). */
const CONTROL_TOPICS = 4;

/**
 * Zone IDs of us-east-1 without several current instance types the stack's services may need. Zone names map to zone IDs differently in every account, so synthesis cannot tell
 * which name is use1-az3: it asks for the zones to be pinned.
 */
const US_EAST_1_AVOID = ['use1-az3'];

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
  /** The archive sink (docs/outputs.md); undefined with `sinkFormats=none`. */
  readonly sink?: Sink;
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
    const firehosePartitions = this.#partitions(s);
    const runtimeEnv = this.#appTopicBudget(s, firehosePartitions);
    this.kafka = new Kafka(this, 'Kafka', {
      network: this.network,
      mode: s.kafka,
      kafkaVersion: s.kafkaVersion,
      brokers: s.kafkaBrokers,
      instanceType: s.kafkaInstanceType,
      volumeGiB: this.#brokerVolume(s),
      monitoring: s.kafkaMonitoring,
      topicPrefix: s.topicPrefix,
      topicPartitions: s.topicPartitions,
      firehosePartitions,
      retentionHours: s.retentionHours,
      clients,
      logRetention,
    });
    this.#checkServerlessPartitionSize(s, firehosePartitions);
    this.#checkZones(s);
    if (!s.alarmEmail)
      Annotations.of(this).addWarningV2(
        'crawl-cluster:alarmsNotifyNobody',
        'the alarms notify an SNS topic nobody is subscribed to: deploy with -c alarmEmail=<address> (and confirm ' +
          'the subscription e-mail), or subscribe to the AlarmTopic output yourself',
      );
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
      runtimeEnv,
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
      crawlerCapacity: s.crawlerCapacity,
      crawlerOnDemandBase: s.crawlerOnDemandBase,
      logRetention,
      runtimeEnv: { ...AWS_FLEET_DEFAULTS, ...runtimeEnv },
    });
    const sink = sinkSettings(this.node);
    if (sink.formats !== '') {
      const { network, kafka, storage, functions } = this;
      const shared = { network, kafka, storage, functions, eventSource: s, logRetention, runtimeEnv: s.runtimeEnv };
      this.sink = new Sink(this, 'Sink', { ...sink, ...shared });
    }
    const { enabled: browserFleet, ...browser } = browserFleetSettings(this.node);
    if (browserFleet) {
      const { network, kafka, cache, storage, fleet } = this;
      const shared = { network, kafka, cache, storage, fleet, shutdownDeadlineMs: s.shutdownDeadlineMs, logRetention };
      this.browserFleet = new BrowserFleet(this, 'BrowserFleet', {
        ...browser,
        ...shared,
        runtimeEnv,
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
        runtimeEnv,
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
      sink: this.sink,
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
    if (this.sink)
      new CfnOutput(this, 'SinkUri', { value: this.sink.uri, description: 'SINK_URI: the crawl as files' });
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

  /** KAFKA_COMPRESSION of the fleet's page messages, and what it divides a page by. */
  #codec(s: Settings): { codec: string; ratio: number } {
    const codec = s.runtimeEnv.KAFKA_COMPRESSION ?? AWS_FLEET_DEFAULTS.KAFKA_COMPRESSION ?? 'none';
    return { codec, ratio: COMPRESSION_RATIO[codec] ?? 1 };
  }

  /**
   * Partitions of the crawled firehose: topicPartitions, raised on MSK Serverless to what the firehose needs so that
   * maxTasks crawlers at their peak are not capped by its 5 MB/s per partition (a warning says so when it raises a
   * value given explicitly). The control topics keep topicPartitions. Provisioned brokers have no per-partition
   * limit.
   */
  #partitions(s: Settings): number {
    if (s.kafka !== 'serverless') return s.topicPartitions;
    const { codec, ratio } = this.#codec(s);
    const needed = firehosePartitionsNeeded(s.maxTasks, REFERENCE_PAGE_KB, ratio);
    if (s.topicPartitions >= needed) return s.topicPartitions;
    if (this.node.tryGetContext('topicPartitions') !== undefined)
      Annotations.of(this).addWarningV2(
        'crawl-cluster:firehosePartitions',
        `topicPartitions=${s.topicPartitions} raised to ${needed} for the crawled firehose: ${s.maxTasks} crawler ` +
          `tasks at their peak (${REFERENCE_PAGE_KB} KB pages, ${codec}) publish more than ${s.topicPartitions} ` +
          'partitions x 5 MB/s take on MSK Serverless (docs/cost.md)',
      );
    return needed;
  }

  /**
   * The runtime variables of every function and task, with KAFKA_APPID_TOPICS_MAX bounded on MSK Serverless when
   * per-app topics are on: each app's two topics get topicPartitions partitions, and the cluster takes
   * {@link MSK_SERVERLESS_MAX_PARTITIONS}. A value given above the bound gets a synth warning instead.
   */
  #appTopicBudget(s: Settings, firehosePartitions: number): RuntimeEnv {
    const env = s.runtimeEnv;
    if (s.kafka !== 'serverless' || env.KAFKA_APPID_TOPICS !== 'true') return env;
    const fixed = CONTROL_TOPICS * s.topicPartitions + firehosePartitions;
    const perApp = 2 * s.topicPartitions;
    const apps = Math.max(0, Math.floor((MSK_SERVERLESS_MAX_PARTITIONS - fixed) / perApp));
    const given = env.KAFKA_APPID_TOPICS_MAX;
    if (given === undefined) {
      if (apps < VARIABLES.KAFKA_APPID_TOPICS_MAX.default) return { ...env, KAFKA_APPID_TOPICS_MAX: String(apps) };
      return env;
    }
    if (Number(given) > apps)
      Annotations.of(this).addWarningV2(
        'crawl-cluster:appTopicPartitions',
        `KAFKA_APPID_TOPICS_MAX=${given}: ${given} apps x 2 topics x ${s.topicPartitions} partitions over the ` +
          `${fixed} of the fixed topics pass MSK Serverless's ${MSK_SERVERLESS_MAX_PARTITIONS} partitions a cluster; ` +
          `at most ${apps} apps fit`,
      );
    return env;
  }

  /**
   * EBS GiB per provisioned broker: kafkaVolumeGiB, raised to what the firehose's retention needs at pagesPerMonth
   * unless kafkaVolumeGiB was given. A value given too small, or no volume to size for, gets a synth warning naming
   * what the storage holds.
   */
  #brokerVolume(s: Settings): number {
    if (s.kafka !== 'provisioned') return s.kafkaVolumeGiB;
    const { codec, ratio } = this.#codec(s);
    const bytes = messageBytes(REFERENCE_PAGE_KB, ratio);
    const held = pagesPerMonthHeld(s.kafkaVolumeGiB, s.kafkaBrokers, s.retentionHours, bytes);
    const what =
      `${REFERENCE_PAGE_KB} KB pages (${codec}), ${s.retentionHours} h retention, replication factor ` +
      `${replicationFactor(s.kafkaBrokers)}, at most ${Math.round(BROKER_STORAGE_FILL * 100)} % full`;
    if (s.pagesPerMonth === undefined) {
      Annotations.of(this).addWarningV2(
        'crawl-cluster:brokerStorage',
        `broker storage: ${s.kafkaBrokers} x ${s.kafkaVolumeGiB} GiB holds about ${millions(held)} pages a month ` +
          `(${what}); deploy with -c pagesPerMonth=<pages> to size it for your volume, or -c kafkaVolumeGiB`,
      );
      return s.kafkaVolumeGiB;
    }
    const needed = brokerVolumeGiBNeeded(
      { pagesPerMonth: s.pagesPerMonth, retentionHours: s.retentionHours, messageBytes: bytes },
      s.kafkaBrokers,
    );
    if (this.node.tryGetContext('kafkaVolumeGiB') === undefined) return Math.max(s.kafkaVolumeGiB, needed);
    if (needed > s.kafkaVolumeGiB)
      Annotations.of(this).addWarningV2(
        'crawl-cluster:brokerStorage',
        `broker storage: kafkaVolumeGiB=${s.kafkaVolumeGiB} holds about ${millions(held)} pages a month, not ` +
          `pagesPerMonth=${millions(s.pagesPerMonth)} (${what}): the brokers' disks fill; give ${needed} GiB or ` +
          'leave kafkaVolumeGiB out to size it',
      );
    return s.kafkaVolumeGiB;
  }

  /** MSK Serverless holds at most 250 GB a partition: the firehose's retention at pagesPerMonth must fit. */
  #checkServerlessPartitionSize(s: Settings, firehosePartitions: number): void {
    if (s.kafka !== 'serverless' || s.pagesPerMonth === undefined) return;
    const { ratio } = this.#codec(s);
    const bytes = retainedBytes({
      pagesPerMonth: s.pagesPerMonth,
      retentionHours: s.retentionHours,
      messageBytes: messageBytes(REFERENCE_PAGE_KB, ratio),
    });
    if (bytes / firehosePartitions <= MSK_SERVERLESS_MAX_PARTITION_BYTES) return;
    Annotations.of(this).addWarningV2(
      'crawl-cluster:serverlessPartitionSize',
      `pagesPerMonth=${millions(s.pagesPerMonth)} keeps ${(bytes / firehosePartitions / 1e9).toFixed(0)} GB in each ` +
        `of the firehose's ${firehosePartitions} partitions over ${s.retentionHours} h, more than MSK Serverless's ` +
        '250 GB a partition: lower -c retentionHours or raise -c topicPartitions',
    );
  }

  /**
   * us-east-1 has a zone (use1-az3) without some of the instance types the stack may deploy, and zone names map to
   * zone IDs per account: without pinned zones, synthesis says which IDs to avoid and how to find their names.
   */
  #checkZones(s: Settings): void {
    if (s.availabilityZones !== undefined || Stack.of(this).region !== 'us-east-1') return;
    Annotations.of(this).addWarningV2(
      'crawl-cluster:availabilityZones',
      `us-east-1: pin the VPC's zones with -c availabilityZones=<zone>,<zone> to zones whose IDs are not ` +
        `${US_EAST_1_AVOID.join(', ')} (an older zone without several current instance types); zone names map to IDs ` +
        'differently in every account: aws ec2 describe-availability-zones --region us-east-1 --query ' +
        "'AvailabilityZones[].[ZoneName,ZoneId]' --output text (docs/deploy.md)",
    );
  }
}

/** A page count in millions, for warnings. */
function millions(pages: number): string {
  return pages >= 1e6 ? `${(pages / 1e6).toFixed(pages >= 1e8 ? 0 : 1)}M` : String(Math.round(pages));
}
