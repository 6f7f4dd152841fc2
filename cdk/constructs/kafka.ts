/**
 * Kafka on MSK: Serverless with IAM auth by default, provisioned (TLS + IAM) as an option; the bootstrap brokers
 * (neither resource exposes them, so a custom resource asks GetBootstrapBrokers); the contract's topics, created
 * up front by a custom resource running the project's own `ensureTopics` (auto-create is off on MSK); and IAM
 * grants scoped to the cluster, topic and group ARNs (MSK IAM access control, kafka-cluster:*).
 */
import { ArnFormat, CustomResource, Duration, Fn, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as msk from 'aws-cdk-lib/aws-msk';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import {
  type ClusterTopics,
  clusterTopicList,
  clusterTopics,
  crawledAppTopic,
  outboundAppTopic,
} from '../../lib/kafka/topics.ts';
import { SettingsError } from '../context-values.ts';
import { acknowledge, wildcardResource } from '../nag.ts';
import { stackHash, uniqueName } from '../names.ts';
import { environment } from '../runtime-env.ts';
import type { Settings } from '../settings.ts';
import { CrawlFunction } from './crawl-function.ts';
import type { Network } from './network.ts';

const BASIC_EXECUTION = 'arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole';

/**
 * The regions that offer MSK Serverless (the MSK Developer Guide's "What is MSK Serverless?" note): elsewhere the
 * stack must use `kafka=provisioned`, and synthesis says so instead of a failed deploy.
 */
const MSK_SERVERLESS_REGIONS = [
  'us-east-1',
  'us-east-2',
  'us-west-2',
  'ca-central-1',
  'ap-south-1',
  'ap-southeast-1',
  'ap-southeast-2',
  'ap-northeast-1',
  'ap-northeast-2',
  'eu-central-1',
  'eu-north-1',
  'eu-west-1',
  'eu-west-2',
  'eu-west-3',
];

/** MSK's IAM listener (TLS), on Serverless and provisioned clusters alike. */
export const MSK_IAM_PORT = 9098;

export interface KafkaProps {
  network: Network;
  mode: 'serverless' | 'provisioned';
  /** Provisioned only. */
  kafkaVersion: string;
  brokers: number;
  instanceType: string;
  volumeGiB: number;
  /** Provisioned only. */
  monitoring: Settings['kafkaMonitoring'];
  topicPrefix: string;
  /** Partitions of the control topics (incoming, outbound_firehose, actions, rejected) and of per-app topics. */
  topicPartitions: number;
  /** Partitions of the crawled firehose, sized for the fleet's throughput (cdk/stack.ts). */
  firehosePartitions: number;
  /** `retention.ms` of every topic the stack creates, in hours. */
  retentionHours: number;
  /** Security groups allowed to reach the brokers. */
  clients: ec2.ISecurityGroup[];
  logRetention: logs.RetentionDays;
}

export class Kafka extends Construct {
  readonly clusterArn: string;
  readonly clusterName: string;
  /** `host:port,...` of the IAM listener. */
  readonly bootstrapBrokers: string;
  readonly topicPrefix: string;
  readonly mode: KafkaProps['mode'];
  /** Provisioned brokers (0 on MSK Serverless). */
  readonly brokers: number;
  /**
   * Partitions of the control topics; per-app topics created on first use get as many (lib/kafka/app-topics.ts).
   */
  readonly topicPartitions: number;
  /** Partitions of the crawled firehose. */
  readonly firehosePartitions: number;
  readonly topics: ClusterTopics;
  /** Depend on this before consuming or producing: the topics exist once it is created. */
  readonly topicsResource: CustomResource;
  /** The function behind the topics custom resource. */
  readonly topicsFunction: CrawlFunction;
  readonly securityGroup: ec2.SecurityGroup;
  readonly #clusterUuid: string;

  constructor(scope: Construct, id: string, props: KafkaProps) {
    super(scope, id);
    const { network } = props;
    this.topicPrefix = props.topicPrefix;
    this.mode = props.mode;
    this.brokers = props.mode === 'provisioned' ? props.brokers : 0;
    this.topicPartitions = props.topicPartitions;
    this.firehosePartitions = props.firehosePartitions;
    this.topics = clusterTopics(props.topicPrefix);
    // MSK cluster names: letters, digits and hyphens, at most 64 characters, unique in the account and region.
    this.clusterName = uniqueName(Stack.of(this).stackName, 'kafka', stackHash(this), 64);

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: network.vpc,
      description: 'crawl-cluster MSK brokers',
      // The Lambda event source pollers use this group too, and reach S3 (on-failure destination) from it.
      allowAllOutbound: true,
    });
    // Lambda's MSK pollers run with the cluster's own security group: it must admit itself.
    this.securityGroup.addIngressRule(this.securityGroup, ec2.Port.tcp(MSK_IAM_PORT), 'MSK event source pollers');
    for (const client of props.clients) {
      this.securityGroup.connections.allowFrom(client, ec2.Port.tcp(MSK_IAM_PORT), 'Kafka clients (IAM, TLS)');
    }

    const subnetIds = network.vpc.selectSubnets(network.privateSubnets).subnetIds;
    if (props.mode === 'serverless') {
      const region = Stack.of(this).region;
      if (!Token.isUnresolved(region) && !MSK_SERVERLESS_REGIONS.includes(region))
        throw new SettingsError(
          'kafka',
          `MSK Serverless is not offered in ${region}: deploy with -c kafka=provisioned`,
        );
      const cluster = new msk.CfnServerlessCluster(this, 'Cluster', {
        clusterName: this.clusterName,
        clientAuthentication: { sasl: { iam: { enabled: true } } },
        vpcConfigs: [{ subnetIds, securityGroups: [this.securityGroup.securityGroupId] }],
      });
      this.clusterArn = cluster.attrArn;
    } else {
      const brokerLogs = new logs.LogGroup(this, 'BrokerLogs', {
        retention: props.logRetention,
        removalPolicy: RemovalPolicy.DESTROY,
      });
      const cluster = new msk.CfnCluster(this, 'Cluster', {
        clusterName: this.clusterName,
        kafkaVersion: props.kafkaVersion,
        numberOfBrokerNodes: props.brokers,
        brokerNodeGroupInfo: {
          instanceType: props.instanceType,
          clientSubnets: subnetIds,
          securityGroups: [this.securityGroup.securityGroupId],
          storageInfo: { ebsStorageInfo: { volumeSize: props.volumeGiB } },
        },
        clientAuthentication: { sasl: { iam: { enabled: true } }, unauthenticated: { enabled: false } },
        encryptionInfo: { encryptionInTransit: { clientBroker: 'TLS', inCluster: true } },
        // Per-topic metrics feed the dashboard's ingest and pages graphs (empty at DEFAULT, which is free).
        enhancedMonitoring: props.monitoring,
        loggingInfo: { brokerLogs: { cloudWatchLogs: { enabled: true, logGroup: brokerLogs.logGroupName } } },
      });
      this.clusterArn = cluster.attrArn;
    }
    // arn:<partition>:kafka:<region>:<account>:cluster/<name>/<uuid>
    this.#clusterUuid = Fn.select(2, Fn.split('/', this.clusterArn));

    const brokers = new cr.AwsCustomResource(this, 'BootstrapBrokers', {
      onUpdate: {
        service: 'Kafka',
        action: 'GetBootstrapBrokers',
        parameters: { ClusterArn: this.clusterArn },
        physicalResourceId: cr.PhysicalResourceId.of(`${this.clusterName}-bootstrap-brokers`),
        outputPaths: ['BootstrapBrokerStringSaslIam'],
      },
      policy: cr.AwsCustomResourcePolicy.fromStatements([
        new iam.PolicyStatement({ actions: ['kafka:GetBootstrapBrokers'], resources: [this.clusterArn] }),
      ]),
      installLatestAwsSdk: false,
      logGroup: new logs.LogGroup(this, 'BootstrapBrokersLogs', {
        retention: props.logRetention,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
    });
    this.bootstrapBrokers = brokers.getResponseField('BootstrapBrokerStringSaslIam');
    // The singleton function's role, where the finding is.
    acknowledge(
      brokers.grantPrincipal as iam.Role,
      `IAM4[Policy::${BASIC_EXECUTION}]`,
      "The AwsCustomResource function (aws-cdk-lib's singleton) only logs; its API call is scoped to the cluster.",
    );

    this.topicsFunction = new CrawlFunction(this, 'TopicsFunction', {
      name: 'topics',
      description: 'crawl-cluster: creates the Kafka topics of the contract (CloudFormation custom resource)',
      timeout: Duration.minutes(5),
      memorySize: 256,
      environment: environment(
        {
          KAFKA_BROKERS: this.bootstrapBrokers,
          KAFKA_SASL_MECHANISM: 'aws-msk-iam',
          KAFKA_SSL: 'true',
          KAFKA_CLIENT_ID: 'crawl-cluster-topics',
        },
        {},
      ),
      vpc: network.vpc,
      subnets: network.privateSubnets,
      securityGroups: [network.functionsSecurityGroup],
      logRetention: props.logRetention,
      luaScripts: false,
    });
    this.topicsResource = this.#createTopics(props, this.topicsFunction);
  }

  /** The custom resource that creates the topics with lib/kafka/client.ts `ensureTopics` (functions/topics). */
  #createTopics(props: KafkaProps, onEvent: CrawlFunction): CustomResource {
    const topicNames = clusterTopicList(props.topicPrefix);
    this.grantConnect(onEvent.function);
    iam.Grant.addToPrincipal({
      grantee: onEvent.function,
      actions: ['kafka-cluster:CreateTopic', 'kafka-cluster:DescribeTopic'],
      resourceArns: topicNames.map((t) => this.topicArn(t)),
    });

    const provider = new cr.Provider(this, 'TopicsProvider', {
      onEventHandler: onEvent.function,
      logGroup: new logs.LogGroup(this, 'TopicsProviderLogs', {
        retention: props.logRetention,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
    });
    acknowledge(provider, `IAM4[Policy::${BASIC_EXECUTION}]`, 'The CDK custom resource framework function only logs.');
    acknowledge(
      provider,
      wildcardResource(this, `${onEvent.function.functionArn}:*`),
      'aws-cdk-lib grants the framework invoke on the topics function and its versions.',
    );
    return new CustomResource(this, 'Topics', {
      serviceToken: provider.serviceToken,
      resourceType: 'Custom::KafkaTopics',
      // Any change of the list, the partition counts or the retention re-runs the (idempotent) creation; topics that
      // exist keep theirs.
      properties: {
        Topics: topicNames,
        Partitions: props.topicPartitions,
        TopicPartitions: { [this.topics.crawledFirehose]: props.firehosePartitions },
        RetentionHours: props.retentionHours,
      },
    });
  }

  /** ARN of a topic, or of a topic name pattern (`demo.crawled_*`). */
  topicArn(topic: string): string {
    return Stack.of(this).formatArn({
      service: 'kafka',
      resource: 'topic',
      resourceName: `${this.clusterName}/${this.#clusterUuid}/${topic}`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
  }

  /** ARN of a consumer group. */
  groupArn(group: string): string {
    return Stack.of(this).formatArn({
      service: 'kafka',
      resource: 'group',
      resourceName: `${this.clusterName}/${this.#clusterUuid}/${group}`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
  }

  /** Connect to the cluster (every client). */
  grantConnect(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({ grantee, actions: ['kafka-cluster:Connect'], resourceArns: [this.clusterArn] });
  }

  /**
   * Produce to `topics` (names or `prefix*` patterns) with the idempotent producer every entry point uses
   * (lib/kafka/client.ts createProducer), which needs WriteDataIdempotently on the cluster. A pattern (the per-app
   * topics) may also be created: a new app's topics are created on first use.
   */
  grantProduce(grantee: iam.IGrantable, topics: string[]): void {
    this.grantConnect(grantee);
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka-cluster:WriteDataIdempotently'],
      resourceArns: [this.clusterArn],
    });
    if (topics.length === 0) return;
    const arns = topics.map((t) => this.topicArn(t));
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'],
      resourceArns: arns,
    });
    if (!topics.some((t) => t.includes('*'))) return;
    // Per-app topics: the first process to write to a new app's creates both of them (lib/kafka/app-topics.ts), after
    // counting the apps that have some (so it describes both kinds).
    const perApp = [crawledAppTopic(this.topicPrefix, '*'), outboundAppTopic(this.topicPrefix, '*')].map((t) =>
      this.topicArn(t),
    );
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka-cluster:CreateTopic', 'kafka-cluster:DescribeTopic'],
      resourceArns: perApp,
    });
    const principal = grantee.grantPrincipal;
    if (!Construct.isConstruct(principal)) throw new Error('grantProduce: a topic pattern needs a role construct');
    for (const arn of perApp) {
      acknowledge(
        principal,
        wildcardResource(this, arn),
        "Per-app topics (KAFKA_APPID_TOPICS) are named by each request's appid at run time; the pattern stays " +
          'within this prefix and this cluster.',
      );
    }
  }

  /** What a Lambda MSK event source needs on the function's role to read `topic` as `group`. */
  grantConsume(grantee: iam.IGrantable, topic: string, group: string): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration'],
      resourceArns: [this.clusterArn],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'],
      resourceArns: [this.topicArn(topic)],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'],
      resourceArns: [this.groupArn(group)],
    });
  }
}
