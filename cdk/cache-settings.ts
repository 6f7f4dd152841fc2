/**
 * The frontier's cache settings (context keys `cacheNodeType` ... `cacheSnapshotRetentionDays`, `frontierPartitions`),
 * read and validated for ./settings.ts: the ElastiCache replication group's shape and the partitions its clients split
 * the frontier into.
 */
import { VARIABLES } from '../lib/config/variables.ts';
import { bool, type Get, int, SettingsError, str } from './context-values.ts';

export interface CacheSettings {
  /** ElastiCache node type. @default 'cache.t4g.small' */
  cacheNodeType: string;
  /** Valkey engine version (parameter group family follows the major). @default '8.0' */
  cacheEngineVersion: string;
  /**
   * The functions get the Redis AUTH token in their environment (REDIS_PASSWORD, a CloudFormation dynamic reference
   * to its secret, resolved at deploy) instead of reading the secret at cold start: no Secrets Manager endpoint for
   * them. The token is then readable by whoever may read the functions' configuration (lambda:GetFunctionConfiguration),
   * and a changed secret reaches them only with a deploy that updates them (docs/cost.md). @default false
   */
  redisTokenInEnvironment: boolean;
  /** Cluster mode enabled (shards, configuration endpoint; REDIS_CLUSTER=true). @default false */
  cacheClusterMode: boolean;
  /** Cluster mode only: shards. @default 1 */
  cacheShards: number;
  /**
   * FRONTIER_PARTITIONS of every function and task (lib/redis/keys.ts): each spider type's frontier splits into this
   * many partitions, one per equal range of the cluster's slots. In cluster mode with more than one shard it must be
   * a multiple of cacheShards, so that every shard holds as many partitions as the others.
   * @default cacheShards in cluster mode, else 1
   */
  frontierPartitions: number;
  /** Replicas per shard (0: one node, no Multi-AZ failover; at least 1 for it). @default 1 */
  cacheReplicas: number;
  /** Not the well-known 6379 (cdk-nag AwsSolutions-AEC5). @default 6380 */
  cachePort: number;
  /** Daily snapshots kept. @default 7 */
  cacheSnapshotRetentionDays: number;
}

/**
 * FRONTIER_PARTITIONS for the stack: the shard count unless `frontierPartitions` says otherwise. Partition n of N
 * hashes into the n-th of N equal slot ranges (lib/redis/keys.ts `partitionTag`), and ElastiCache gives each shard an
 * equal range of the slots, so N = k x shards puts k partitions of each spider type on every shard. Any other N
 * loads some shards more than others, and N < shards leaves some without any frontier at all: a synth error, not a
 * silent imbalance. Without cluster mode (or with one shard) every partition lands on the one shard, so any count
 * in range is accepted.
 */
function frontierPartitions(get: Get, clusterMode: boolean, shards: number): number {
  const spec = VARIABLES.FRONTIER_PARTITIONS;
  const sharded = clusterMode && shards > 1;
  if (sharded && shards > spec.maximum)
    throw new SettingsError(
      'cacheShards',
      `at most ${spec.maximum} in cluster mode: every shard needs a frontier partition, and FRONTIER_PARTITIONS is ` +
        `at most ${spec.maximum} (got ${shards})`,
    );
  const n = int(get, 'frontierPartitions', sharded ? shards : 1, spec.minimum, spec.maximum);
  if (sharded && n % shards !== 0)
    throw new SettingsError(
      'frontierPartitions',
      `must be a multiple of cacheShards (${shards}), so that every shard holds as many frontier partitions as the ` +
        `others; ${n} would ${n < shards ? `leave ${shards - n} shard(s) without any` : 'load some shards more than others'}`,
    );
  return n;
}

/**
 * Reads and validates the cache's keys.
 * @throws SettingsError naming the first invalid key
 */
export function readCacheSettings(get: Get): CacheSettings {
  const cacheClusterMode = bool(get, 'cacheClusterMode', false);
  const cacheShards = int(get, 'cacheShards', 1, 1, 500);
  return {
    cacheNodeType: str(get, 'cacheNodeType', 'cache.t4g.small', /^cache\.[a-z0-9]+\.[a-z0-9]+$/),
    cacheEngineVersion: str(get, 'cacheEngineVersion', '8.0', /^[78]\.\d+$/),
    redisTokenInEnvironment: bool(get, 'redisTokenInEnvironment', false),
    cacheClusterMode,
    cacheShards,
    frontierPartitions: frontierPartitions(get, cacheClusterMode, cacheShards),
    cacheReplicas: int(get, 'cacheReplicas', 1, 0, 5),
    cachePort: int(get, 'cachePort', 6380, 1024, 65535),
    cacheSnapshotRetentionDays: int(get, 'cacheSnapshotRetentionDays', 7, 1, 35),
  };
}
