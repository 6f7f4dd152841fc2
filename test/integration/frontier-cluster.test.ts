import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from 'ioredis';
import { describe, expect, test } from 'vitest';
import type { Lease } from '../../lib/frontier-model.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import {
  crawlKey,
  dupefilterKey,
  type PartitionKeys,
  partitionKeyList,
  partitionKeys,
  statsCounterKey,
  statsRegistryKey,
} from '../../lib/redis/keys.ts';
import { allScripts } from '../../lib/redis/scripts.ts';
import { incrementStats } from '../../lib/redis/stats.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseAll,
  queueRequest,
  seedCrawl,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';
import { recordScriptCalls } from '../helpers/scripts.ts';
import { uniqueName } from '../helpers/services.ts';

const redis = frontierTestRedis();

const SCRIPTS_DIR = join(import.meta.dirname, '../../lib/redis/scripts');

/** Exercises every Frontier operation (and so every frontier script) once or more. */
async function exerciseFrontier(frontier: Frontier, spider: string): Promise<void> {
  // Names of its own per spider type: with SCHEDULER_TYPE_ENABLED=false the types share a partition and domain config.
  const a = seedCrawl('app', `${spider}-a`, { spiderid: spider, expires: T0 / 1000 + 10 });
  const b = seedCrawl('app', `${spider}-b`, { spiderid: spider });
  await frontier.enqueue(
    spider,
    [
      { crawl: a, request: queueRequest(`http://x-${spider}.com/1`) },
      { crawl: childCrawl(a), request: queueRequest(`http://y-${spider}.com/2`, -9, 1) },
      { crawl: b, request: queueRequest(`http://x-${spider}.com/1`) },
      { crawl: childCrawl(b), request: queueRequest(`http://z-${spider}.com/3`, -9, 1) },
    ],
    T0,
  );
  const leases = await leaseAll(frontier, spider, T0, { ip: '10.0.0.1' });
  expect(leases).toHaveLength(4);
  const [l1, l2, l3, l4] = leases as [Lease, Lease, Lease, Lease];
  // The page's children: its own spider type's fold into the ack (ack-enqueue); with no children, a plain ack.
  const children = [{ crawl: childCrawl(a), request: queueRequest(`http://x-${spider}.com/4`, -9, 1) }];
  await frontier.ack(l1, 'done', T0 + 1, new Map([[spider, children]]));
  await frontier.extend([l2], T0 + 1);
  await frontier.restamp(l2, { ip: '10.0.0.1', maxWaitMs: 10_000, now: T0 + 1 });
  await frontier.release([l2], T0 + 1);
  await frontier.retry(l3, 10, T0 + 1);
  await frontier.reclaim(spider, T0 + 10 * 60_000);
  await frontier.ack(l4, 'fail', T0 + 10 * 60_000);
  await frontier.configureDomain('domain-update', `x-${spider}.com`, { hits: 3, window: 2, scale: 0.5 }, T0 + 2);
  await frontier.configureDomain('blacklist-update', `y-${spider}.com`, {}, T0 + 2);
  await frontier.crawlInfo(spider, 'app', `${spider}-a`, T0 + 3);
  await frontier.appInfo(spider, 'app', T0 + 3);
  await frontier.dueCrawls(spider, T0 + 20_000);
  await frontier.queueSummary(spider, 10, T0 + 20_000);
  await frontier.stop(spider, 'app', `${spider}-a`, T0 + 20_000);
  await frontier.sweepFinished(spider, T0 + 3_600_000);
}

describe('cluster readiness', () => {
  test.each([
    { typeEnabled: true, ipEnabled: false },
    { typeEnabled: false, ipEnabled: true },
  ])('every script a Frontier runs gets keys that all hash to one slot ($typeEnabled, $ipEnabled)', async (modes) => {
    const frontier = testFrontier(redis, modes);
    const calls = await recordScriptCalls(redis, async () => {
      await exerciseFrontier(frontier, 'link');
      await exerciseFrontier(frontier, 'wandering');
    });

    const frontierScripts = allScripts()
      .map((s) => s.name)
      // stats-incr, state-loss, the URL frontier's uf-* scripts and the REST replies' reply-* scripts have tests of
      // their own (url-frontier.test.ts for uf-*, the reply store's for reply-*, state-marker.test.ts for state-loss);
      // crawl-counts runs only with several partitions (frontier-partitions.test.ts); dupefilter-add and the reshard-*
      // scripts only in a move to another partition count (frontier-reshard.test.ts and url-frontier-reshard.test.ts
      // check their slots).
      .filter(
        (n) =>
          n !== 'stats-incr' &&
          n !== 'state-loss' &&
          n !== 'crawl-counts' &&
          n !== 'dupefilter-add' &&
          !n.startsWith('reshard-') &&
          !n.startsWith('uf-') &&
          !n.startsWith('reply-'),
      );
    expect(new Set(calls.map((c) => c.script))).toEqual(new Set(frontierScripts));
    for (const { script, keys } of calls) {
      const spider = keys[0]?.endsWith(':q:wandering') ? 'wandering' : 'link';
      const p = frontier.partitionFor(spider);
      // The partition keys come first, in PartitionKeys order; then only this partition's dupefilters.
      const fixed = partitionKeyList(p).length;
      expect(keys.slice(0, fixed), script).toEqual(partitionKeyList(p));
      const extra = keys.slice(fixed);
      const dupe = (crawlid: string) => dupefilterKey(p, crawlKey('app', `${spider}-${crawlid}`, spider));
      if (script === 'stop') expect(extra).toEqual([dupe('a')]);
      else if (script === 'enqueue') expect(extra).toEqual([dupe('a'), dupe('b')]);
      else if (script === 'ack-enqueue') expect(extra).toEqual([dupe('a')]);
      else expect(extra, script).toEqual([]);
      const slots = new Set<number>();
      for (const key of keys) slots.add(Number(await redis.cluster('KEYSLOT', key)));
      expect(slots.size, `${script}: ${keys.join(' ')}`).toBe(1);
    }
    // Spider types that share a throttle (SCHEDULER_TYPE_ENABLED=false) share a slot; otherwise each has its own tag.
    const link = partitionKeys(frontier.partitionFor('link')).queue;
    const wandering = partitionKeys(frontier.partitionFor('wandering')).queue;
    const same = (await redis.cluster('KEYSLOT', link)) === (await redis.cluster('KEYSLOT', wandering));
    if (!modes.typeEnabled) expect(same).toBe(true);
    else expect(link.split('}')[0]).not.toBe(wandering.split('}')[0]);
  });

  test('the stats script gets keys that all hash to one slot', async () => {
    const prefix = uniqueName();
    const names = ['a', 'crawler:m1:200'];
    try {
      const calls = await recordScriptCalls(redis, async () => {
        await incrementStats(
          redis,
          prefix,
          names.map((name) => ({ name })),
          T0,
        );
      });
      expect(new Set(calls.map((c) => c.script))).toEqual(new Set(['stats-incr']));
      const keys = calls.flatMap((c) => c.keys);
      expect(keys).toContain(statsRegistryKey(prefix));
      const slots = new Set<number>();
      for (const key of keys) slots.add(Number(await redis.cluster('KEYSLOT', key)));
      expect(slots.size).toBe(1);
    } finally {
      await redis.del(statsRegistryKey(prefix), ...names.map((n) => statsCounterKey(prefix, n)));
    }
  });

  test('this Redis really is in cluster mode: a script given keys of two slots is refused', async () => {
    const keys = [`{${uniqueName()}}:a`, `{${uniqueName()}}:b`];
    expect(await redis.cluster('KEYSLOT', keys[0] as string)).not.toBe(
      await redis.cluster('KEYSLOT', keys[1] as string),
    );
    await expect(redis.eval("return redis.call('GET', KEYS[2])", 2, ...keys)).rejects.toThrow(/CROSSSLOT|slot/i);
  });

  test('after the server forgets every script (SCRIPT FLUSH, as after a restart or failover) the frontier still works', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'flush');
    await frontier.enqueue('link', [{ crawl, request: queueRequest('http://flush.example/1') }], T0);
    await Promise.all((redis as Cluster).nodes('master').map((node) => node.script('FLUSH')));
    await frontier.enqueue('link', [{ crawl: childCrawl(crawl), request: queueRequest('http://flush.example/2') }], T0);
    expect((await leaseAll(frontier, 'link', T0)).map((l) => l.url).sort()).toEqual([
      'http://flush.example/1',
      'http://flush.example/2',
    ]);
  });
});

describe('a cluster of several shards', () => {
  /** The master that serves `key`'s slot (CLUSTER SLOTS ranges, by port). */
  async function shardOf(key: string): Promise<number> {
    const slot = Number(await redis.cluster('KEYSLOT', key));
    const ranges = (await redis.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no shard serves slot ${slot}`);
    return range[2][1];
  }

  test('the cluster-mode Redis of the tests has three masters, each serving a third of the slots', async () => {
    const masters = (redis as Cluster).nodes('master');
    expect(masters).toHaveLength(3);
    const ranges = (await redis.cluster('SLOTS')) as unknown as [number, number][];
    const owned = ranges.reduce((sum, [from, to]) => sum + (to - from + 1), 0);
    expect(owned).toBe(16384);
  });

  test('frontier calls of partitions on different shards, issued together, all succeed with exact counts', async () => {
    const frontier = testFrontier(redis);
    // Spider types on every shard: ioredis auto-pipelines the calls of one event-loop turn, and its grouping put
    // scripts of two shards into one pipeline, which it then refused ("same slots allocation group").
    const spiders = Array.from({ length: 12 }, (_, i) => `s${i}`);
    const shards = new Set(
      await Promise.all(spiders.map((s) => shardOf(partitionKeys(frontier.partitionFor(s)).queue))),
    );
    expect(shards.size).toBe(3);
    const perSpider = 5;
    await Promise.all(
      spiders.map((spider) => {
        const crawl = seedCrawl('app', `c-${spider}`, { spiderid: spider });
        const items = Array.from({ length: perSpider }, (_, i) => ({
          crawl: i === 0 ? crawl : childCrawl(crawl),
          request: queueRequest(`http://h${i}-${spider}.example/${i}`),
        }));
        return frontier.enqueue(spider, items, T0);
      }),
    );
    const leases = await Promise.all(spiders.map((spider) => leaseAll(frontier, spider, T0)));
    expect(leases.map((l) => l.length)).toEqual(spiders.map(() => perSpider));
    const acks = await Promise.all(
      leases.flatMap((ls, k) =>
        ls.map((lease) => {
          const spider = spiders[k] as string;
          const child = { crawl: childCrawl(lease.crawl), request: queueRequest(`${lease.url}/child`, -9, 1) };
          return frontier.ack(lease, 'done', T0 + 1, new Map([[spider, [child]]]));
        }),
      ),
    );
    expect(acks.every((a) => a.children?.size === 1)).toBe(true);
    const children = await Promise.all(spiders.map((spider) => leaseAll(frontier, spider, T0 + 2)));
    expect(children.map((l) => l.length)).toEqual(spiders.map(() => perSpider));
  });
});

describe('Lua sources', () => {
  const files = [
    ...readdirSync(SCRIPTS_DIR)
      .filter((f) => f.endsWith('.lua'))
      .map((f) => join(SCRIPTS_DIR, f)),
    ...readdirSync(join(SCRIPTS_DIR, 'includes')).map((f) => join(SCRIPTS_DIR, 'includes', f)),
  ];

  /** Commands whose keys are exactly their first argument. */
  const FIRST_ARG_KEY = new Set(
    (
      'EXPIRE TYPE GET SET HDEL HEXISTS HGET HGETALL HINCRBY HKEYS HLEN HMGET HSET HSETNX HVALS INCR INCRBY SADD SCARD ' +
      'SISMEMBER SMEMBERS SREM ZADD ZCARD ZCOUNT ZINCRBY ZMSCORE ZRANGE ZRANGEBYLEX ZRANGEBYSCORE ZREM ' +
      'ZREMRANGEBYLEX ZREMRANGEBYRANK ZREMRANGEBYSCORE ZSCORE ZPOPMIN PERSIST PTTL PEXPIRE DUMP RESTORE RPUSH LRANGE LTRIM'
    ).split(' '),
  );
  /** Commands all of whose arguments are keys. */
  const ALL_ARGS_KEYS = new Set(['DEL', 'UNLINK', 'EXISTS']);
  /** Commands of the form `destination numkeys key...`. */
  const STORE_KEYS = new Set(['ZUNIONSTORE', 'ZINTERSTORE']);
  /** Commands that touch no key (TIME: the frontier's clock in production). */
  const NO_KEYS = new Set(['TIME']);

  test('every script opens with a header naming its KEYS and ARGV', () => {
    for (const s of allScripts()) {
      const header = /^--\[\[([\s\S]*?)\]\]/.exec(s.source)?.[1] ?? '';
      expect(header, s.name).toMatch(/KEYS\[/);
      expect(header, s.name).toMatch(/ARGV\[/);
    }
  });

  test('every redis.call names a literal command and touches only keys taken from KEYS, never built ones', () => {
    const seen = new Set<string>();
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const source = stripComments(text);
      // An include's key variables are assigned by the scripts that splice it in (includes/dupefilter.lua's c.dupe):
      // its keys are checked in each of them, as loaded.
      const contexts = file.includes('/includes/')
        ? allScripts()
            .filter((s) => s.source.includes(text))
            .map((s) => stripComments(s.source))
        : [source];
      expect(contexts.length, file).toBeGreaterThan(0);
      for (const args of redisCalls(source)) {
        const where = `${file.split('/scripts/')[1]}: redis.call(${args.join(', ')})`;
        const command = /^'([A-Z]+)'$/.exec(args[0] ?? '')?.[1];
        expect(command, where).toBeDefined();
        seen.add(command as string);
        if (NO_KEYS.has(command as string)) {
          expect(args, where).toHaveLength(1);
          continue;
        }
        const store = STORE_KEYS.has(command as string);
        expect(FIRST_ARG_KEY.has(command as string) || ALL_ARGS_KEYS.has(command as string) || store, where).toBe(true);
        // ZUNIONSTORE destination numkeys key...: the destination and its numkeys source keys.
        const keyArgs = store
          ? [args[1] as string, ...args.slice(3, 3 + Number(args[2]))]
          : ALL_ARGS_KEYS.has(command as string)
            ? args.slice(1)
            : args.slice(1, 2);
        if (store) expect(Number.isInteger(Number(args[2])), `${where}: a literal numkeys`).toBe(true);
        for (const key of keyArgs)
          for (const context of contexts) expect(isDeclaredKey(key, context), where).toBe(true);
      }
    }
    expect(seen.has('KEYS') || seen.has('SCAN')).toBe(false);
    expect(seen.size).toBeGreaterThan(10);
  });

  test('the frontier include names the partition keys as KEYS[1..n] in the order of PartitionKeys', () => {
    const include = readFileSync(join(SCRIPTS_DIR, 'includes', 'frontier.lua'), 'utf8');
    const table = /local K = \{([\s\S]*?)\n\}/.exec(stripComments(include))?.[1] ?? '';
    const entries = [...table.matchAll(/(\w+)\s*=\s*KEYS\[(\d+)\]/g)].map((m) => [m[1], Number(m[2])] as const);
    const luaName: Record<keyof PartitionKeys, string> = {
      queue: 'queue',
      ready: 'ready',
      waiting: 'waiting',
      delayed: 'delayed',
      leases: 'leases',
      throttle: 'throttle',
      domainConfig: 'dcfg',
      blacklist: 'black',
      seq: 'seq',
      crawlRefs: 'refs',
      crawlSettings: 'settings',
      counts: 'counts',
      crawlIndex: 'cidx',
      appIndex: 'apps',
      domainCounts: 'dcount',
      expiry: 'expiry',
      stopped: 'stopped',
      finished: 'finished',
      queuedTotal: 'qtotal',
    };
    const order = Object.keys(partitionKeys({ prefix: 'p', scope: 's', partition: 0, spider: 'link' }));
    expect(entries).toEqual(order.map((name, i) => [luaName[name as keyof PartitionKeys], i + 1]));
  });

  test('the key check itself catches a built key name', () => {
    const bad = "local k = KEYS[1]\nredis.call('GET', KEYS[1] .. ':x')\nredis.call('GET', 'q:' .. ARGV[1])";
    const verdicts = redisCalls(bad).map((args) => isDeclaredKey(args[1] as string, bad));
    expect(verdicts).toEqual([false, false]);
    expect(redisCalls("redis.call('HGET', K.dcfg, domain)").map((a) => isDeclaredKey(a[1] as string, ''))).toEqual([
      true,
    ]);
  });
});

/** Drops `--[[ ... ]]` blocks and `--` line comments (the sources have no `--` inside strings). */
function stripComments(source: string): string {
  return source.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--[^\n]*/g, '');
}

/** The argument texts of every `redis.call(...)` / `redis.pcall(...)`, split at top-level commas. */
function redisCalls(source: string): string[][] {
  const out: string[][] = [];
  const re = /redis\.p?call\(/g;
  for (let m = re.exec(source); m; m = re.exec(source)) {
    const args: string[] = [];
    let depth = 0;
    let quote = '';
    let current = '';
    let i = m.index + m[0].length;
    for (; i < source.length; i++) {
      const ch = source[i] as string;
      if (quote) {
        current += ch;
        if (ch === '\\') current += source[++i] ?? '';
        else if (ch === quote) quote = '';
        continue;
      }
      if (ch === "'" || ch === '"') quote = ch;
      else if ('([{'.includes(ch)) depth++;
      else if (')]}'.includes(ch)) {
        if (depth === 0) break;
        depth--;
      } else if (ch === ',' && depth === 0) {
        args.push(current.trim());
        current = '';
        continue;
      }
      current += ch;
    }
    args.push(current.trim());
    out.push(args);
  }
  return out;
}

/**
 * A key argument is declared when it is `K.<name>` (the include's table of KEYS), `KEYS[...]`, or a plain
 * variable or field that the same source binds straight from `KEYS[...]` — and never a concatenation.
 */
function isDeclaredKey(arg: string, source: string): boolean {
  if (arg.includes('..')) return false;
  if (/^K\.[a-z]+$/.test(arg) || /^KEYS\[[^\]]+\]$/.test(arg)) return true;
  const name = /^(?:[a-z_]\w*\.)?([a-z_]\w*)$/i.exec(arg)?.[1];
  return name !== undefined && new RegExp(`\\b${name}\\s*=\\s*KEYS\\[[^\\]]+\\]\\s*[,\\n}]`).test(source);
}
