/**
 * `crawl-cluster ack-lost`: the operator's acknowledgement of lost frontier state (docs/design.md §12). When a watcher
 * finds a partition's state marker gone, health stays RED with the reason until someone has seen it; this shows what
 * was lost and acknowledges it (the REST API's `POST /ack-lost` does the same). It talks to Redis directly (REDIS_*),
 * as `frontier serve` does.
 */
import type { Command } from 'commander';
import { config } from '../lib/config/index.ts';
import type { SlotLoss } from '../lib/ports.ts';
import { createRedis, redisSettings } from '../lib/redis/client.ts';
import { redisStateStore } from '../lib/redis/state-marker.ts';
import type { Output } from './output.ts';

function lossLine(loss: SlotLoss): string {
  return `${new Date(loss.at).toISOString()} ${loss.tag}: ${loss.reason}`;
}

/** `crawl-cluster ack-lost`. */
export function registerAckLost(program: Command, out: Output): void {
  program
    .command('ack-lost')
    .description(
      'show the frontier state the cluster lost (a Redis node replaced or emptied) and acknowledge it: health is GREEN again',
    )
    .option('--show', 'only show the losses, acknowledge nothing')
    .option('--prefix <prefix>', 'Redis key prefix (default: REDIS_KEY_PREFIX)')
    .addHelpText(
      'after',
      [
        '',
        'Health (GET / of the REST API, the dashboard badge) is RED from the moment a crawler, the stats run or the',
        'redis-monitor finds a state marker gone, until this command (or POST /ack-lost) acknowledges it. The crawls',
        'that were queued there are gone: feed them again (with new crawlids). `info` keeps answering',
        '"frontier state lost" for them for 7 days after the acknowledgement.',
        'Exit codes: 0 acknowledged, or nothing to acknowledge; 1 Redis unreachable.',
      ].join('\n'),
    )
    .action(async (opts: { show?: boolean; prefix?: string }) => {
      const vars = config();
      const redis = createRedis({ ...redisSettings(vars), connectionName: 'crawl-cluster-ack-lost' });
      try {
        const store = redisStateStore(redis, opts.prefix ?? vars.REDIS_KEY_PREFIX);
        const record = opts.show ? await store.record() : await store.ack(Date.now());
        if (out.json) {
          out.data({ acknowledged: opts.show ? 0 : (record?.losses.length ?? 0), record: record ?? null });
          return;
        }
        if (record === undefined) {
          out.info('no frontier state was lost; nothing to acknowledge');
          return;
        }
        out.info(opts.show ? 'frontier state lost:' : `acknowledged ${record.losses.length} frontier state loss(es):`);
        for (const loss of record.losses) out.info(`  ${lossLine(loss)}`);
        if (opts.show && record.open.length > 0) {
          out.info(`${record.open.length} not acknowledged (health is RED); acknowledge with: crawl-cluster ack-lost`);
        }
      } finally {
        redis.disconnect();
      }
    });
}
