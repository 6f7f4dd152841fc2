import type { Command } from 'commander';
import { startUrlFrontierServer } from '../functions/url-frontier/server.ts';
import { config } from '../lib/config/index.ts';
import { createRedis, redisSettings } from '../lib/redis/client.ts';
import { frontierOptions } from '../lib/redis/frontier-options.ts';
import { MAX_PARTITIONS } from '../lib/redis/keys.ts';
import { recordedPartitionCount } from '../lib/redis/partition-count.ts';
import { RESHARD_BATCH, type ReshardProgress, type ReshardSummary, reshardFrontier } from '../lib/redis/reshard.ts';
import { UrlFrontierStore } from '../lib/redis/url-frontier/store.ts';
import { integerOption } from './options.ts';
import type { Output } from './output.ts';
import { ProgressLine } from './progress-line.ts';

/**
 * `frontier serve`: the crawler-commons URL Frontier API (gRPC) over the Redis of the configuration. `frontier
 * reshard`: the crawl frontier moved to another number of partitions (lib/redis/reshard.ts).
 */
export function registerFrontier(program: Command, out: Output): void {
  const frontier = program
    .command('frontier')
    .description('the crawl frontier in Redis: the URL Frontier API over it, and changing its partitions');
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
  registerReshard(frontier, out);
}

/** `frontier reshard`. */
function registerReshard(frontier: Command, out: Output): void {
  const partitions = integerOption({ min: 1, max: MAX_PARTITIONS });
  frontier
    .command('reshard')
    .description(
      'move the crawl frontier of every spider type (queued requests, delayed retries, crawls, dupefilters, domain config) and the URL Frontier store to N partitions per scope (FRONTIER_PARTITIONS=N)',
    )
    .requiredOption('--to <n>', 'partitions per scope after the move', partitions)
    .option(
      '--from <n>',
      'partitions per scope now (default: the count recorded in Redis, else FRONTIER_PARTITIONS)',
      partitions,
    )
    .option('--prefix <prefix>', 'Redis key prefix (default: REDIS_KEY_PREFIX)')
    .option('--batch <n>', 'requests per Redis script call', integerOption({ min: 1, max: 5000 }), RESHARD_BATCH)
    .addHelpText(
      'after',
      [
        '',
        'Stop the crawlers and the monitors first: the move refuses to start while requests are leased. URL Frontier',
        'servers may keep running: their writes answer UNAVAILABLE until the move is done (held URLs move with their',
        'holds). It can be stopped (Ctrl-C) or die at any point and be run again: the second run finishes the move,',
        'with no request or URL lost or queued twice. When it is done, set FRONTIER_PARTITIONS=N for every process',
        '(URL Frontier servers included), then start them again.',
        'Exit codes: 0 moved (or nothing to move); 1 refused (leases held, another move unfinished), stopped by a',
        'process still writing to the frontier (stop it, run again), or Redis failed.',
      ].join('\n'),
    )
    .action(async (opts: { to: number; from?: number; prefix?: string; batch: number }) => {
      const vars = config();
      const options = { ...frontierOptions(vars), prefix: opts.prefix ?? vars.REDIS_KEY_PREFIX };
      const redis = createRedis({ ...redisSettings(vars), connectionName: 'crawl-cluster-reshard' });
      let last: ReshardProgress | undefined;
      const line = new ProgressLine(() => progressText(last));
      try {
        const from = opts.from ?? (await recordedPartitionCount(redis, options.prefix)) ?? vars.FRONTIER_PARTITIONS;
        if (from === opts.to) {
          if (out.json) out.data({ from, to: opts.to, moved: 0 });
          else
            out.info(`the frontier has ${from} partition${from === 1 ? '' : 's'} per scope already: nothing to move`);
          return;
        }
        const summary = await reshardFrontier(redis, options, {
          from,
          to: opts.to,
          batch: opts.batch,
          onProgress: (p) => {
            last = p;
          },
        });
        line.stop();
        if (out.json) out.data(summary);
        else for (const text of summaryLines(summary)) out.info(text);
      } finally {
        line.stop();
        redis.disconnect();
      }
    });
}

function progressText(p: ReshardProgress | undefined): string {
  if (p === undefined) return 'reshard: reading the frontier';
  if (p.step === 'delete') return `reshard: deleting the old partitions (${p.spider})`;
  const n = (x: number) => x.toLocaleString('en-US');
  if (p.step.startsWith('uf-')) {
    const share = p.queuesTotal > 0 ? ` (${Math.floor((100 * p.queues) / p.queuesTotal)}%)` : '';
    return `reshard: ${n(p.queues)} / ${n(p.queuesTotal)} URL Frontier queues moved${share}`;
  }
  const pct = p.total > 0 ? ` (${Math.floor((100 * p.moved) / p.total)}%)` : '';
  const dupes = p.fingerprints > 0 ? `, ${n(p.fingerprints)} dupefilter fingerprints copied` : '';
  return `reshard: ${n(p.moved)} / ${n(p.total)} requests moved${pct}${dupes} (${p.spider})`;
}

/** The URL Frontier store's summary line. */
function urlFrontierLine(u: ReshardSummary['urlFrontier']): string {
  if (u.plan === 'skip') return '  URL Frontier: nothing to move';
  const n = (x: number) => x.toLocaleString('en-US');
  const rate =
    u.ms > 0
      ? ` (${n(Math.round((u.queues * 1000) / u.ms))} queues/s, ${n(Math.round((u.urls * 1000) / u.ms))} URLs/s)`
      : '';
  const present = u.present > 0 ? ` (${n(u.present)} copied by an earlier run)` : '';
  return (
    `  URL Frontier: ${n(u.queues)} queues of ${n(u.crawls)} crawls${present}, ${n(u.urls)} URLs (${n(u.held)} held, ` +
    `${n(u.completed)} completed)${rate}; domain overrides: ${n(u.domainConfigs)}, blacklisted domains: ${n(u.blacklisted)}`
  );
}

/** What a finished move says: what moved, then what the operator does next. */
function summaryLines(s: ReshardSummary): string[] {
  const n = (x: number) => x.toLocaleString('en-US');
  const moved = s.queued + s.delayed;
  // The crawl frontier's rate over its own time (the URL Frontier store's part is timed apart).
  const ms = s.ms - s.urlFrontier.ms;
  const rate = ms > 0 ? ` (${n(Math.round((moved * 1000) / ms))} requests/s)` : '';
  const lines = [
    `${s.resumed ? 'finished the move' : 'moved the frontier'} from ${s.from} to ${s.to} partitions per scope in ${(s.ms / 1000).toFixed(1)} s${rate}:`,
    `  spider types: ${s.spiders.length > 0 ? s.spiders.join(', ') : 'none'}`,
    `  requests: ${n(s.queued)} queued, ${n(s.delayed)} delayed retries${s.present > 0 ? ` (${n(s.present)} moved by an earlier run)` : ''}; ${n(s.dropped)} of stopped crawls dropped`,
    `  crawls: ${n(s.crawls)} (each registered in every partition), dupefilter fingerprints: ${n(s.fingerprints)}`,
    `  domain config: ${n(s.domainConfigs)}, blacklisted domains: ${n(s.blacklisted)}, throttle fields: ${n(s.throttles)}, stopped crawls: ${n(s.stopped)}`,
  ];
  if (s.reclaimed > 0) lines.push(`  expired leases returned to their queues first: ${n(s.reclaimed)}`);
  lines.push(urlFrontierLine(s.urlFrontier));
  lines.push(
    `Now set FRONTIER_PARTITIONS=${s.to} everywhere (crawlers, monitors, functions, the REST API, URL Frontier servers), then start them again.`,
  );
  return lines;
}
