/**
 * Creating Redis connections is the entry points' job (docs/style.md §4); this is the one factory they use,
 * so standalone, cluster mode (ElastiCache cluster mode / Serverless) and TLS are set up the same way.
 */
import { Cluster, Redis } from 'ioredis';

/** The connection we accept everywhere: a standalone client or a cluster client. */
export type RedisClient = Redis | Cluster;

export interface RedisSettings {
  host: string;
  port: number;
  /** @default false */
  cluster?: boolean;
  /** @default false */
  tls?: boolean;
  username?: string;
  password?: string;
  /** Name shown in CLIENT LIST. */
  connectionName?: string;
  /**
   * Connection errors (refused, reset) while ioredis reconnects. Commands fail on their own with the error,
   * so the default ignores these events; without a listener ioredis prints each one as "Unhandled".
   */
  onError?: (error: Error) => void;
}

export function redisSettings(vars: {
  REDIS_HOST: string;
  REDIS_PORT: number;
  REDIS_CLUSTER: boolean;
  REDIS_TLS: boolean;
  REDIS_USERNAME: string;
  REDIS_PASSWORD: string;
}): RedisSettings {
  return {
    host: vars.REDIS_HOST,
    port: vars.REDIS_PORT,
    cluster: vars.REDIS_CLUSTER,
    tls: vars.REDIS_TLS,
    username: vars.REDIS_USERNAME || undefined,
    password: vars.REDIS_PASSWORD || undefined,
  };
}

/**
 * Opens a client. Commands fail after a bounded number of reconnect attempts instead of queueing
 * forever, so a caller (e.g. a Lambda batch) learns that Redis is gone and can report the failure.
 */
export function createRedis(settings: RedisSettings): RedisClient {
  const common = {
    username: settings.username,
    password: settings.password,
    tls: settings.tls ? {} : undefined,
    connectionName: settings.connectionName,
    maxRetriesPerRequest: 2,
    connectTimeout: 5000,
    enableAutoPipelining: true,
  };
  const onError = settings.onError ?? (() => {});
  if (settings.cluster) {
    const cluster = new Cluster([{ host: settings.host, port: settings.port }], {
      // ElastiCache's TLS certificates name the configuration endpoint, not the node IPs.
      dnsLookup: (address, callback) => callback(null, address),
      redisOptions: common,
      enableAutoPipelining: true,
      slotsRefreshTimeout: 5000,
    });
    cluster.on('error', onError);
    return cluster;
  }
  const client = new Redis({ host: settings.host, port: settings.port, ...common });
  client.on('error', onError);
  return client;
}
