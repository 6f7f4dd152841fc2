/**
 * The URL Frontier API as a container (the crawler image with its command overridden): reads the configuration
 * (lib/config, REDIS_*), serves urlfrontier.URLFrontier on 0.0.0.0:7071 for the load balancer (ListNodes reports
 * URL_FRONTIER_ADVERTISE, the load balancer's endpoint, which the stack sets), and on SIGTERM
 * or SIGINT stops accepting calls, drains the running ones and closes Redis.
 */
import { config } from '../../lib/config/index.ts';
import { createRedis, redisSettings } from '../../lib/redis/client.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { startUrlFrontierServer } from './server.ts';

/** The port the load balancer forwards to (TCP). */
export const URL_FRONTIER_PORT = 7071;

const vars = config();
const redis = createRedis({ ...redisSettings(vars), connectionName: 'crawl-cluster-url-frontier' });
const store = new UrlFrontierStore(redis, vars.REDIS_KEY_PREFIX, { partitions: vars.FRONTIER_PARTITIONS });
const line = (level: string, message: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`);
const server = await startUrlFrontierServer(store, {
  host: '0.0.0.0',
  port: URL_FRONTIER_PORT,
  advertise: vars.URL_FRONTIER_ADVERTISE,
  log: (level, message) => line(level, message),
});
line('info', `URL Frontier API listening on ${server.address}`, { prefix: store.prefix });
await new Promise<void>((resolve) => {
  process.once('SIGINT', resolve);
  process.once('SIGTERM', resolve);
});
await server.close(5000);
redis.disconnect();
line('info', 'stopped');
