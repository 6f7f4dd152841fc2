import type { Command } from 'commander';
import { startUrlFrontierServer } from '../functions/url-frontier/server.ts';
import { config } from '../lib/config/index.ts';
import { createRedis, redisSettings } from '../lib/redis/client.ts';
import { UrlFrontierStore } from '../lib/redis/url-frontier/store.ts';
import { integerOption } from './options.ts';
import type { Output } from './output.ts';

/** `frontier serve`: the crawler-commons URL Frontier API (gRPC) over the Redis of the configuration. */
export function registerFrontier(program: Command, out: Output): void {
  const frontier = program.command('frontier').description('the crawler-commons URL Frontier API (gRPC) over Redis');
  frontier
    .command('serve')
    .description(
      'serve the URL Frontier API 2.6 (service urlfrontier.URLFrontier, plaintext gRPC) from Redis (REDIS_*) until SIGINT or SIGTERM',
    )
    .option('--port <port>', 'port to listen on (0: any free port)', integerOption({ min: 0, max: 65535 }), 7071)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--prefix <prefix>', 'Redis key prefix of the URL frontier (default: REDIS_KEY_PREFIX)')
    .addHelpText(
      'after',
      '\nAll state (crawls, queues, URLs, holds, delays, the active flag) lives in Redis under {<prefix>:uf} (one tag per\npartition with FRONTIER_PARTITIONS > 1), so several servers over one Redis share one frontier and a restart loses\nnothing.',
    )
    .action(async (opts: { port: number; host: string; prefix?: string }) => {
      const vars = config();
      const redis = createRedis({ ...redisSettings(vars), connectionName: 'crawl-cluster-url-frontier' });
      const store = new UrlFrontierStore(redis, opts.prefix ?? vars.REDIS_KEY_PREFIX, {
        partitions: vars.FRONTIER_PARTITIONS,
      });
      const server = await startUrlFrontierServer(store, {
        host: opts.host,
        port: opts.port,
        advertise: vars.URL_FRONTIER_ADVERTISE,
        log: (level, message) => (level === 'error' ? out.error(message) : out.info(message)),
      });
      if (out.json) out.data({ address: server.address, port: server.port, prefix: store.prefix });
      else out.info(`URL Frontier API listening on ${server.address} (prefix ${store.prefix})`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
      redis.disconnect();
    });
}
