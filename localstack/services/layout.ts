/**
 * Where the local services keep their data, logs and pid files, and on which ports they listen.
 * Everything lives under one git-ignored directory so a test run can use its own.
 */
import { join, resolve } from 'node:path';
import type { Variables } from '../../lib/config/index.ts';
import { REPO_ROOT } from '../repo-root.ts';

export interface ServicesLayout {
  dir: string;
  redisPort: number;
  redisClusterPort: number;
  /** Replicas of each master of the cluster-mode Redis (CRAWL_REDIS_CLUSTER_REPLICAS). */
  redisClusterReplicas: number;
  /**
   * `cluster-node-timeout` of the cluster-mode Redis (ms): how long a node may not answer before it counts as failing
   * and, with replicas, its replica takes over. 5000 (a failover test shortens it).
   */
  redisClusterNodeTimeoutMs: number;
  kafkaPort: number;
  kafkaControllerPort: number;
  kafkaHeap: string;
  /** Whether `services up` runs LocalStack (CRAWL_LOCALSTACK). */
  localstack: boolean;
  localstackPort: number;
  /** The Python that builds LocalStack's virtualenv; '' to look for one. */
  localstackPython: string;
  /** CRAWL_CACHE_DIR: where the shared LocalStack virtualenv is built; '' for ~/.cache/crawl-cluster. */
  cacheDir: string;
  /** Seconds to wait for each service to become ready. */
  timeoutSec: number;
}

export function servicesLayout(
  vars: Pick<
    Variables,
    | 'CRAWL_SERVICES_DIR'
    | 'CRAWL_REDIS_PORT'
    | 'CRAWL_REDIS_CLUSTER_PORT'
    | 'CRAWL_REDIS_CLUSTER_REPLICAS'
    | 'CRAWL_KAFKA_PORT'
    | 'CRAWL_KAFKA_CONTROLLER_PORT'
    | 'CRAWL_KAFKA_HEAP'
    | 'CRAWL_LOCALSTACK'
    | 'CRAWL_LOCALSTACK_PORT'
    | 'CRAWL_LOCALSTACK_PYTHON'
    | 'CRAWL_CACHE_DIR'
    | 'CRAWL_SERVICES_TIMEOUT'
  >,
): ServicesLayout {
  return {
    dir: resolve(vars.CRAWL_SERVICES_DIR || join(REPO_ROOT, '.services')),
    redisPort: vars.CRAWL_REDIS_PORT,
    redisClusterPort: vars.CRAWL_REDIS_CLUSTER_PORT,
    redisClusterReplicas: vars.CRAWL_REDIS_CLUSTER_REPLICAS,
    redisClusterNodeTimeoutMs: 5000,
    kafkaPort: vars.CRAWL_KAFKA_PORT,
    kafkaControllerPort: vars.CRAWL_KAFKA_CONTROLLER_PORT,
    kafkaHeap: vars.CRAWL_KAFKA_HEAP,
    localstack: vars.CRAWL_LOCALSTACK,
    localstackPort: vars.CRAWL_LOCALSTACK_PORT,
    localstackPython: vars.CRAWL_LOCALSTACK_PYTHON,
    cacheDir: vars.CRAWL_CACHE_DIR,
    timeoutSec: vars.CRAWL_SERVICES_TIMEOUT,
  };
}

/** A line of progress for a person watching `services up`. */
export type Progress = (message: string) => void;

/** What `status` reports for one service. */
export interface ServiceStatus {
  name: string;
  /** `running` (ours), `external` (something else answers on the port), `stopped`. */
  state: 'running' | 'external' | 'stopped';
  pid?: number;
  address: string;
  log?: string;
}
