/**
 * The frontier's Redis: an ElastiCache Valkey replication group with TLS in transit (required), encryption at
 * rest, an AUTH token generated in Secrets Manager, Multi-AZ with automatic failover (with at least one replica;
 * `cacheReplicas=0` is a single node without either), daily snapshots, and
 * `maxmemory-policy noeviction`: a full cache must fail writes loudly, never drop queued requests silently.
 * Cluster mode (shards behind a configuration endpoint) is an option; every script is cluster-safe (docs/design.md §3).
 * The frontier's partitions (FRONTIER_PARTITIONS) go with the shards: every client of the cache gets the same count
 * from {@link Cache.clientEnvironment}, so no two processes disagree on where a domain's requests live.
 */
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elasticache from 'aws-cdk-lib/aws-elasticache';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { acknowledge } from '../nag.ts';
import { stackHash, uniqueName } from '../names.ts';
import type { RuntimeEnv } from '../runtime-env.ts';
import type { Network } from './network.ts';

export interface CacheProps {
  network: Network;
  /** Security groups allowed to reach the cache port. */
  clients: ec2.ISecurityGroup[];
  nodeType: string;
  engineVersion: string;
  clusterMode: boolean;
  /** Cluster mode only. */
  shards: number;
  replicas: number;
  /** FRONTIER_PARTITIONS of every client (validated against the shards in cdk/settings.ts). */
  frontierPartitions: number;
  port: number;
  snapshotRetentionDays: number;
  logRetention: logs.RetentionDays;
}

export class Cache extends Construct {
  /** Primary endpoint, or the configuration endpoint in cluster mode. */
  readonly host: string;
  readonly port: number;
  readonly clusterMode: boolean;
  /**
   * What every process that uses the frontier gets in its environment to find it and agree on its layout: the
   * endpoint, TLS, the cluster client, and the partition count. The AUTH token is not here: the tasks get it as an
   * ECS secret, the functions its secret's ARN or, with redisTokenInEnvironment, a dynamic reference.
   */
  readonly clientEnvironment: RuntimeEnv;
  /** The AUTH token (REDIS_PASSWORD). */
  readonly authToken: secretsmanager.Secret;
  readonly replicationGroupId: string;
  /** Node ids (the CacheClusterId metric dimension), for the memory alarm. */
  readonly nodeIds: string[];
  readonly securityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: CacheProps) {
    super(scope, id);
    const { network } = props;
    this.port = props.port;
    this.clusterMode = props.clusterMode;
    this.replicationGroupId = replicationGroupId(Stack.of(this).stackName, stackHash(this));

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: network.vpc,
      description: 'crawl-cluster Valkey frontier',
      allowAllOutbound: false,
    });
    for (const client of props.clients) {
      this.securityGroup.connections.allowFrom(client, ec2.Port.tcp(props.port), 'Valkey clients (TLS + AUTH)');
    }

    this.authToken = new secretsmanager.Secret(this, 'AuthToken', {
      description: 'crawl-cluster Valkey AUTH token (REDIS_PASSWORD)',
      // ElastiCache AUTH tokens: 16-128 printable characters without / " @; letters and digits are always safe.
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });

    acknowledge(
      this.authToken,
      'SMG4',
      'ElastiCache rotates an AUTH token through ModifyReplicationGroup (strategy ROTATE, then SET), which no ' +
        'Secrets Manager rotation function provides; rotation is a manual operation.',
    );

    const subnetGroup = new elasticache.CfnSubnetGroup(this, 'Subnets', {
      description: 'crawl-cluster Valkey frontier',
      subnetIds: network.vpc.selectSubnets(network.privateSubnets).subnetIds,
    });
    const major = props.engineVersion.split('.')[0];
    const parameters = new elasticache.CfnParameterGroup(this, 'Parameters', {
      cacheParameterGroupFamily: `valkey${major}`,
      description: 'crawl-cluster frontier: never evict',
      properties: { 'maxmemory-policy': 'noeviction', 'cluster-enabled': props.clusterMode ? 'yes' : 'no' },
    });
    const slowLog = new logs.LogGroup(this, 'SlowLog', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    const shape = props.clusterMode
      ? { clusterMode: 'enabled', numNodeGroups: props.shards, replicasPerNodeGroup: props.replicas }
      : { numCacheClusters: 1 + props.replicas };
    const group = new elasticache.CfnReplicationGroup(this, 'ReplicationGroup', {
      replicationGroupId: this.replicationGroupId,
      replicationGroupDescription: 'crawl-cluster frontier',
      engine: 'valkey',
      engineVersion: props.engineVersion,
      cacheNodeType: props.nodeType,
      cacheParameterGroupName: parameters.ref,
      cacheSubnetGroupName: subnetGroup.ref,
      securityGroupIds: [this.securityGroup.securityGroupId],
      port: props.port,
      transitEncryptionEnabled: true,
      transitEncryptionMode: 'required',
      atRestEncryptionEnabled: true,
      authToken: this.authToken.secretValue.unsafeUnwrap(),
      multiAzEnabled: props.replicas > 0,
      // Cluster mode requires automatic failover even without replicas.
      automaticFailoverEnabled: props.replicas > 0 || props.clusterMode,
      autoMinorVersionUpgrade: true,
      snapshotRetentionLimit: props.snapshotRetentionDays,
      snapshotWindow: '03:00-04:00',
      preferredMaintenanceWindow: 'sun:05:00-sun:06:00',
      logDeliveryConfigurations: [
        {
          logType: 'slow-log',
          logFormat: 'json',
          destinationType: 'cloudwatch-logs',
          destinationDetails: { cloudWatchLogsDetails: { logGroup: slowLog.logGroupName } },
        },
      ],
      ...shape,
    });
    if (props.replicas === 0)
      acknowledge(
        group,
        'AEC4',
        'cacheReplicas=0 (profile small) is a deliberate single node: no failover, a node failure loses what was ' +
          'queued since the last daily snapshot; cacheReplicas=1 restores Multi-AZ.',
      );
    // Deleting the stack keeps a final snapshot of the frontier.
    group.applyRemovalPolicy(RemovalPolicy.SNAPSHOT);

    this.host = props.clusterMode ? group.attrConfigurationEndPointAddress : group.attrPrimaryEndPointAddress;
    this.clientEnvironment = {
      REDIS_HOST: this.host,
      REDIS_PORT: String(this.port),
      REDIS_TLS: 'true',
      REDIS_CLUSTER: String(this.clusterMode),
      FRONTIER_PARTITIONS: String(props.frontierPartitions),
    };
    this.nodeIds = props.clusterMode
      ? Array.from({ length: props.shards }, (_, s) =>
          Array.from(
            { length: 1 + props.replicas },
            (_, n) => `${this.replicationGroupId}-${pad(s + 1, 4)}-${pad(n + 1, 3)}`,
          ),
        ).flat()
      : Array.from({ length: 1 + props.replicas }, (_, n) => `${this.replicationGroupId}-${pad(n + 1, 3)}`);
  }
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/**
 * ElastiCache ids: lowercase letters, digits and single hyphens, a letter first, at most 40 characters; unique in the
 * account and region, so the cut stack name ends with a hash of the whole one (`crawlcluster-frontier-1a2b3c4d`).
 */
function replicationGroupId(stackName: string, hash: string): string {
  const base = stackName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^[^a-z]+/, '');
  return uniqueName(base || 'crawl', 'frontier', hash, 40);
}
