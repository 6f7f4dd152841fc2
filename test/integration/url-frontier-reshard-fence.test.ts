/**
 * What else may touch the URL Frontier store while `frontier reshard` moves it (lib/redis/url-frontier/reshard.ts), on
 * the cluster-mode Redis: URL Frontier servers left running at either count are fenced out (UNAVAILABLE, saying why)
 * during the move and, at the old count, for good after it, while the held URLs their clients complete later are
 * found at the new count; a writer the fence does not stop (a server of an older version) stops the move, which moves
 * what it wrote when run again; a move refuses to merge two URL frontiers; an older frontier is indexed first.
 */
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, test } from 'vitest';
import { startUrlFrontierServer, type UrlFrontierServer } from '../../functions/url-frontier/server.ts';
import { reshardKey } from '../../lib/redis/keys.ts';
import { type ReshardOptions, type ReshardProgress, reshardFrontier } from '../../lib/redis/reshard.ts';
import { ReshardInterruptedError, ReshardRefusedError } from '../../lib/redis/reshard-errors.ts';
import {
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierQueueKeys,
} from '../../lib/redis/url-frontier/keys.ts';
import type { PutItem } from '../../lib/redis/url-frontier/model.ts';
import type { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { urlFrontierClientConstructor } from '../../lib/url-frontier/definition.ts';
import { TEST_FRONTIER_OPTIONS } from '../helpers/frontier.ts';
import { type AnyClient, bidi, stream, unary } from '../helpers/grpc.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';
import { dropStores } from '../helpers/url-frontier.ts';
import {
  BIG_QUEUE,
  buildUfScenario,
  served,
  storeAt,
  UF_CRAWLS,
  type UfScenario,
  ufAnswers,
} from '../helpers/url-frontier-scenario.ts';

const redis = clusterRedis();
const Client = urlFrontierClientConstructor();

/** The test frontier's options (test/helpers/frontier.ts), which the move is given too. */
const BASE = TEST_FRONTIER_OPTIONS;

const prefixes: string[] = [];
const servers: UrlFrontierServer[] = [];
const clients: grpc.Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.close(100);
  const clock = { now: 0 };
  for (const prefix of prefixes.splice(0)) {
    await dropStores(
      redis,
      [1, 3, 6].map((n) => storeAt(redis, prefix, n, clock)),
    );
    await redis.del(reshardKey(prefix));
  }
});

async function scenario(): Promise<UfScenario> {
  const s = await buildUfScenario(redis);
  prefixes.push(s.store.prefix, s.reference.prefix);
  return s;
}

function move(prefix: string, from: number, to: number, extra: Partial<ReshardOptions> = {}) {
  return reshardFrontier(redis, { ...BASE, prefix, partitions: from }, { from, to, ...extra });
}

/** A URL Frontier server over `store` (its error log into `errors`), and a client of it. */
async function serve(store: UrlFrontierStore, errors: string[] = []): Promise<AnyClient> {
  const server = await startUrlFrontierServer(store, {
    port: 0,
    log: (level, message) => {
      if (level === 'error') errors.push(message);
    },
  });
  servers.push(server);
  const client = new Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as AnyClient;
  clients.push(client);
  return client;
}

const discovered = (url: string, crawlID = 'c1') => ({ discovered: { info: { url, key: '', crawlID, metadata: {} } } });
const completed = (url: string, crawlID: string) => ({
  known: { info: { url, key: '', crawlID, metadata: {} }, refetchable_from_date: 0 },
});

/** The status a call failed with (UNAVAILABLE and the fence's message, for a fenced frontier). */
async function failure(call: Promise<unknown>): Promise<{ code: number; details: string }> {
  const e = (await call.then(
    () => ({ code: grpc.status.OK, details: 'no error' }),
    (error: grpc.ServiceError) => error,
  )) as grpc.ServiceError;
  return { code: e.code, details: e.details };
}

/** Writes as a URL Frontier server of an older version would: through the fence of `store`'s partitions. */
async function unfenced<T>(store: UrlFrontierStore, write: () => Promise<T>): Promise<T> {
  const fences = await Promise.all(store.partitions.map((p) => redis.hget(urlFrontierGlobalKeys(p).state, 'fence')));
  await Promise.all(store.partitions.map((p) => redis.hdel(urlFrontierGlobalKeys(p).state, 'fence')));
  try {
    return await write();
  } finally {
    await Promise.all(
      store.partitions.map((p, i) => redis.hset(urlFrontierGlobalKeys(p).state, 'fence', fences[i] as string)),
    );
  }
}

describe('frontier reshard and the URL Frontier servers', () => {
  test('servers left running refuse writes during the move, and at the old count after it; held URLs complete at the new count', async () => {
    const s = await scenario();
    const prefix = s.store.prefix;
    const errors: string[] = [];
    const oldServer = await serve(storeAt(redis, prefix, 1, s.clock), errors);
    const newServer = await serve(storeAt(redis, prefix, 6, s.clock), errors);
    // PutURLs answers FAIL for each item (its client sends it again later) and logs why; other calls UNAVAILABLE.
    const putFails = async (client: AnyClient, why: string) => {
      const acks = await bidi<{ status: string }>(client, 'PutURLs', [discovered('http://new.test/1')]);
      expect(acks.map((a) => a.status)).toEqual(['FAIL']);
      expect(errors.pop()).toBe(`url frontier: PutURLs: UFMOVE ${why}`);
    };
    const moving =
      `the URL frontier of prefix ${prefix} is being moved from 1 to 6 partitions (crawl-cluster frontier reshard): ` +
      'try again once the move is done';
    let checked = 0;
    const during = async (p: ReshardProgress) => {
      if (p.step !== 'uf-take' || checked++ !== 1) return;
      for (const client of [oldServer, newServer]) {
        await putFails(client, moving);
        expect(await failure(stream(client, 'GetURLs', { max_urls_per_queue: 0, max_queues: 0 }))).toEqual({
          code: grpc.status.UNAVAILABLE,
          details: moving,
        });
        expect(await failure(unary(client, 'SetActive', { state: false }))).toEqual({
          code: grpc.status.UNAVAILABLE,
          details: moving,
        });
      }
    };
    const summary = await move(prefix, 1, 6, { onProgress: during });
    expect(checked).toBeGreaterThan(1);
    // Held URLs do not hold the move back: they move with their holds.
    expect(summary.urlFrontier.held).toBeGreaterThan(300);

    const moved =
      `the URL frontier of prefix ${prefix} moved to 6 partitions (crawl-cluster frontier reshard): restart this ` +
      'server with FRONTIER_PARTITIONS=6';
    await putFails(oldServer, moved);
    expect(await failure(stream(oldServer, 'GetURLs', { max_urls_per_queue: 0, max_queues: 0 }))).toEqual({
      code: grpc.status.UNAVAILABLE,
      details: moved,
    });
    expect(await unary(oldServer, 'ListCrawls', {})).toEqual({ values: [] });

    // The client that holds a URL of the large queue completes it through a server of the new count.
    const stats = (server: AnyClient) =>
      unary<{ inProcess: number; counts: Record<string, number> }>(server, 'GetStats', {
        crawlID: BIG_QUEUE.crawl,
        key: BIG_QUEUE.key,
      });
    const held = `http://${BIG_QUEUE.key}/1`;
    expect((await s.store.urlStatus(BIG_QUEUE.crawl, BIG_QUEUE.key, held)) ?? null).toBeNull();
    const before = await stats(newServer);
    expect(before.inProcess).toBe(300);
    const acks = await bidi<{ status: string }>(newServer, 'PutURLs', [completed(held, BIG_QUEUE.crawl)]);
    expect(acks.map((a) => a.status)).toEqual(['OK']);
    expect((await stats(newServer)).inProcess).toBe(299);
    // ... and it is not served again once the other holds end, while they are.
    s.clock.now += 700_000;
    const again = (await served(storeAt(redis, prefix, 6, s.clock), BIG_QUEUE)).map((l) => l.split('\t')[2]);
    expect(again).toContain(`http://${BIG_QUEUE.key}/10`);
    expect(again).not.toContain(held);
  });

  test('a queue changed after its copy by a writer the fence does not stop stops the move; run again, the change is moved', async () => {
    const s = await scenario();
    const one = storeAt(redis, s.store.prefix, 1, s.clock);
    const six = storeAt(redis, s.store.prefix, 6, s.clock);
    const extra: PutItem = {
      ...BIG_QUEUE,
      url: `http://${BIG_QUEUE.key}/late`,
      kind: 'discovered',
      date: 0,
      metadata: {},
    };
    let wrote = false;
    // Once the large queue is registered at the new count and not yet taken from the old, a URL goes into the old.
    const writer = async (p: ReshardProgress) => {
      if (wrote || p.step !== 'uf-put') return;
      const there = urlFrontierCrawlKeys(six.partitionOf(BIG_QUEUE.key), BIG_QUEUE.crawl).queues;
      if ((await redis.zscore(there, BIG_QUEUE.key)) === null) return;
      wrote = true;
      expect(await unfenced(one, () => one.put([extra]))).toEqual(['OK']);
    };
    const stopped = move(s.store.prefix, 1, 6, { onProgress: writer });
    await expect(stopped).rejects.toBeInstanceOf(ReshardInterruptedError);
    await expect(stopped).rejects.toThrow(
      '1 URL Frontier queue changed in the old partitions after it was copied (crawl "c1", queue "big.example.org"): ' +
        'something still writes to the frontier (a monitor, a crawler or a URL Frontier server). Nothing is lost',
    );
    expect(await one.urlStatus(BIG_QUEUE.crawl, BIG_QUEUE.key, extra.url)).toBeDefined();
    expect(await s.reference.put([extra])).toEqual(['OK']);

    const again = await move(s.store.prefix, 1, 6);
    expect(again.urlFrontier.present).toBeGreaterThan(0);
    expect(await ufAnswers(six)).toEqual(await ufAnswers(s.reference));
    expect(await served(six)).toEqual(await served(s.reference));
  });

  test('a crawl given queues at the old count once they were moved stops the move; run again, it is moved', async () => {
    const s = await scenario();
    const one = storeAt(redis, s.store.prefix, 1, s.clock);
    const late: PutItem[] = ['x.late.test', 'y.late.test'].map((key) => ({
      crawl: 'late',
      key,
      url: `http://${key}/`,
      kind: 'discovered',
      date: 0,
      metadata: { m: ['1'] },
    }));
    let wrote = false;
    const writer = async (p: ReshardProgress) => {
      if (wrote || p.step !== 'uf-take' || p.queues !== p.queuesTotal) return;
      wrote = true;
      await unfenced(one, () => one.put(late));
    };
    await expect(move(s.store.prefix, 1, 6, { onProgress: writer })).rejects.toThrow(
      '1 URL Frontier crawl was given queues in the old partitions during the move: something still writes',
    );
    await s.reference.put(late);
    const again = await move(s.store.prefix, 1, 6);
    expect(again.urlFrontier).toMatchObject({ crawls: 1, queues: 2, present: 0 });
    const six = storeAt(redis, s.store.prefix, 6, s.clock);
    expect(await six.crawls()).toEqual([...UF_CRAWLS, 'late'].sort());
    expect(await ufAnswers(six)).toEqual(await ufAnswers(s.reference));
  });
});

describe('frontier reshard: which URL frontier moves', () => {
  const put = (store: UrlFrontierStore, crawl: string, key: string) =>
    store.put([{ crawl, key, url: `http://${key}/`, kind: 'discovered', date: 0, metadata: {} }]);

  test('refuses to merge crawls held at both counts; leaves one held only at the new count as it is', async () => {
    const prefix = uniqueName('ufb');
    prefixes.push(prefix);
    const clock = { now: Date.now() };
    const [one, six] = [storeAt(redis, prefix, 1, clock), storeAt(redis, prefix, 6, clock)];
    await put(one, 'a', 'a.test');
    await put(six, 'b', 'b.test');
    const refused = move(prefix, 1, 6);
    await expect(refused).rejects.toBeInstanceOf(ReshardRefusedError);
    await expect(refused).rejects.toThrow(
      'the URL Frontier store holds crawls at both partition counts: 1 at 1 and 1 at 6 (servers started with ' +
        'FRONTIER_PARTITIONS=6 before the move?). Delete the crawls of one of them (DeleteCrawl), then run this again ' +
        '(nothing was moved)',
    );
    expect(await redis.exists(reshardKey(prefix))).toBe(0);
    for (const p of [...one.partitions, ...six.partitions])
      expect(await redis.hget(urlFrontierGlobalKeys(p).state, 'fence')).toBeNull();

    await one.deleteCrawl('a');
    const summary = await move(prefix, 1, 6);
    expect(summary.urlFrontier).toMatchObject({ plan: 'skip', queues: 0 });
    expect(await six.crawls()).toEqual(['b']);
    expect(await six.queues('b')).toEqual(['b.test']);
    expect(await put(six, 'b', 'c.test')).toEqual(['OK']);
  });

  test('a prefix without a URL frontier gets no URL Frontier key from a move', async () => {
    const prefix = uniqueName('ufn');
    prefixes.push(prefix);
    const clock = { now: Date.now() };
    expect((await move(prefix, 1, 6)).urlFrontier.plan).toBe('skip');
    for (const store of [storeAt(redis, prefix, 1, clock), storeAt(redis, prefix, 6, clock)])
      for (const p of store.partitions) expect(await redis.exists(urlFrontierGlobalKeys(p).state)).toBe(0);
  });

  test('an older frontier (never indexed) is indexed first, and a copy a dead run left half-made is replaced', async () => {
    const s = await scenario();
    const one = storeAt(redis, s.store.prefix, 1, s.clock);
    const six = storeAt(redis, s.store.prefix, 6, s.clock);
    // As an older version stored it: no `qdue`, no backlog total, no queue counted.
    const g = urlFrontierGlobalKeys(one.partitions[0]);
    await redis.hdel(g.state, 'indexed', 'backlog');
    await redis.unlink(g.queueDue);
    for (const crawl of UF_CRAWLS)
      for (const key of await one.queues(crawl))
        await redis.hdel(urlFrontierQueueKeys(one.partitions[0], crawl, key).info, 'counted');
    // What a run that died during the paged copy of the large queue leaves in its new partition: keys, unregistered.
    const half = urlFrontierQueueKeys(six.partitionOf(BIG_QUEUE.key), BIG_QUEUE.crawl, BIG_QUEUE.key);
    await redis.hset(half.created, 'stale', '1');
    await redis.zadd(half.sched, 1, 'stale');
    await redis.sadd(half.done, 'stale');

    const summary = await move(s.store.prefix, 1, 6);
    expect(summary.urlFrontier.queues).toBe(525);
    expect(await six.backlogTotal()).toBe(await s.reference.backlogTotal());
    expect(await ufAnswers(six)).toEqual(await ufAnswers(s.reference));
    expect(await served(six)).toEqual(await served(s.reference));
  });
});
