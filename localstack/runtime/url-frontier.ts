/**
 * The URL Frontier API (functions/url-frontier/server.ts) as `crawl-cluster local` serves it: plaintext gRPC on
 * host:port over a Redis connection of its own (the frontier prefix is REDIS_KEY_PREFIX), closed with it.
 */
import { startUrlFrontierServer } from '../../functions/url-frontier/server.ts';
import type { Variables } from '../../lib/config/index.ts';
import { createRedis, redisSettings } from '../../lib/redis/client.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import type { RuntimeLog } from './log.ts';

export interface LocalUrlFrontier {
  /** The bound port. */
  port: number;
  /** `host:port`. */
  address: string;
  /** Stops the server, then closes its Redis connection. */
  close(): Promise<void>;
}

export async function startLocalUrlFrontier(options: {
  vars: Variables;
  /** 0 picks a free port. */
  port: number;
  /** @default 127.0.0.1 */
  host?: string;
  log: RuntimeLog;
}): Promise<LocalUrlFrontier> {
  const { vars, log } = options;
  const redis = createRedis({ ...redisSettings(vars), connectionName: 'crawl-cluster-url-frontier' });
  const store = new UrlFrontierStore(redis, vars.REDIS_KEY_PREFIX, { partitions: vars.FRONTIER_PARTITIONS });
  try {
    const server = await startUrlFrontierServer(store, {
      host: options.host ?? '127.0.0.1',
      port: options.port,
      log: (level, message) => log(level, `url-frontier: ${message}`),
    });
    log('info', `URL Frontier API listening on ${server.address}`, { prefix: store.prefix });
    return {
      port: server.port,
      address: server.address,
      async close() {
        await server.close();
        redis.disconnect();
      },
    };
  } catch (error) {
    redis.disconnect();
    throw error;
  }
}
