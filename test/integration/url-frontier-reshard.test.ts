/**
 * `frontier reshard` moving the URL Frontier store (lib/redis/url-frontier/reshard.ts) on the cluster-mode Redis: a URL
 * frontier of several crawls, 525 queues, metadata, held, completed and rescheduled URLs, a crawl limit, blocked queues,
 * per-queue and default delays, a domain override and a blacklist, and one queue too large to copy whole, moved from 1
 * partition to 6 and then to 3, and moves stopped part-way and run again. After each, every read of the API answers as
 * before, and GetURLs serves what its twin that was never moved serves, round after round (holds ending, completions).
 */
import { afterEach, describe, expect, test } from 'vitest';
import { reshardKey } from '../../lib/redis/keys.ts';
import { type ReshardOptions, type ReshardStep, reshardFrontier } from '../../lib/redis/reshard.ts';
import { urlFrontierGlobalKeys, urlFrontierQueueKeys, urlFrontierTag } from '../../lib/redis/url-frontier/keys.ts';
import type { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { TEST_FRONTIER_OPTIONS } from '../helpers/frontier.ts';
import { recordCommands, recordScriptCalls } from '../helpers/scripts.ts';
import { clusterRedis } from '../helpers/services.ts';
import { dropStores } from '../helpers/url-frontier.ts';
import {
  BIG_QUEUE,
  buildUfScenario,
  served,
  storeAt,
  UF_CRAWLS,
  UF_T0,
  type UfScenario,
  ufAnswers,
} from '../helpers/url-frontier-scenario.ts';

const redis = clusterRedis();

/** The test frontier's options (test/helpers/frontier.ts), which the move is given too. */
const BASE = TEST_FRONTIER_OPTIONS;

const scenarios: UfScenario[] = [];
afterEach(async () => {
  for (const { store, reference, clock } of scenarios.splice(0)) {
    for (const prefix of [store.prefix, reference.prefix]) {
      await dropStores(
        redis,
        [1, 3, 6].map((n) => storeAt(redis, prefix, n, clock)),
      );
      await redis.del(reshardKey(prefix));
    }
  }
});

async function scenario(): Promise<UfScenario> {
  const s = await buildUfScenario(redis);
  scenarios.push(s);
  return s;
}

function move(s: UfScenario, from: number, to: number, extra: Partial<ReshardOptions> = {}) {
  return reshardFrontier(
    redis,
    { ...BASE, prefix: s.store.prefix, partitions: from },
    { from, to, now: s.clock.now, ...extra },
  );
}

/** The queue keys and modes of a reshard-uf-put call's ARGV: per crawl its ID, n, then 10 values per queue. */
function putModes(argv: unknown[]): [string, string][] {
  const out: [string, string][] = [];
  for (let c = 0; c < argv.length; c += 2 + 10 * Number(argv[c + 1]))
    for (let i = 0; i < Number(argv[c + 1]); i++) {
      const a = c + 2 + 10 * i;
      out.push([String(argv[a]), String(argv[a + 1])]);
    }
  return out;
}

/** A hook that stops the move (as a crash would) at the `nth` report of `step`. */
function dieAt(step: ReshardStep, nth: number): Pick<ReshardOptions, 'onProgress'> {
  let seen = 0;
  return {
    onProgress: (p) => {
      if (p.step === step && ++seen === nth) throw new Error(`killed at ${step} #${nth}`);
    },
  };
}

/** What the moved store must hold: the reference's queues, URLs, holds and completions, counted. */
async function totals(s: UrlFrontierStore) {
  let queues = 0;
  let urls = 0;
  let held = 0;
  let completed = 0;
  for (const crawl of UF_CRAWLS) {
    const stats = await s.stats(crawl);
    queues += stats.numberOfQueues;
    urls += await s.countUrls(crawl, undefined);
    held += stats.inProcess;
    completed += stats.completed;
  }
  return { queues, urls, held, completed };
}

/** The old count's partitions hold nothing but a fence that sends a server to the new count. */
async function expectOnlyFence(s: UfScenario, from: number, to: number, queueKeys: readonly string[]) {
  const old = storeAt(redis, s.store.prefix, from, s.clock);
  for (const p of old.partitions) {
    const g = urlFrontierGlobalKeys(p);
    expect(await redis.exists(g.crawls, g.queueDue, g.domainConfig, g.blacklist)).toBe(0);
    expect(await redis.hgetall(g.state)).toEqual({
      fence:
        `the URL frontier of prefix ${s.store.prefix} moved to ${to} partitions (crawl-cluster frontier reshard): ` +
        `restart this server with FRONTIER_PARTITIONS=${to}`,
    });
  }
  let left = 0;
  for (const key of queueKeys) left += await redis.exists(key);
  expect(left).toBe(0);
}

/** The frontier-wide settings are in every partition of `count`, as in the reference's one, and nothing is fenced. */
async function expectSettings(s: UfScenario, count: number) {
  const ref = urlFrontierGlobalKeys(s.reference.partitions[0]);
  const refState = await redis.hmget(ref.state, 'active', 'delay');
  for (const p of storeAt(redis, s.store.prefix, count, s.clock).partitions) {
    const g = urlFrontierGlobalKeys(p);
    expect(await redis.hmget(g.state, 'active', 'delay', 'indexed', 'fence')).toEqual([...refState, '2', null]);
    expect(await redis.hgetall(g.domainConfig)).toEqual(await redis.hgetall(ref.domainConfig));
    expect(await redis.smembers(g.blacklist)).toEqual(['site4.com']);
  }
}

/** Every queue key name of the store at its count (to check none is left once it has moved). */
async function queueKeyNames(s: UrlFrontierStore): Promise<string[]> {
  const out: string[] = [];
  for (const crawl of UF_CRAWLS)
    for (const key of await s.queues(crawl))
      out.push(...Object.values(urlFrontierQueueKeys(s.partitionOf(key), crawl, key)));
  return out;
}

/**
 * GetURLs over the moved store (at `count`) and over its twin, round after round, must serve the same URLs: now, once
 * the first holds end, after completions (PutURLs of held URLs with date 0), and an hour later.
 */
async function expectSameServing(s: UfScenario, count: number) {
  const moved = storeAt(redis, s.store.prefix, count, s.clock);
  s.clock.now = UF_T0 + 10_000;
  const first = await served(moved);
  expect(first.length).toBeGreaterThan(500);
  expect(first).toEqual(await served(s.reference));
  s.clock.now = UF_T0 + 602_000;
  expect(await served(moved)).toEqual(await served(s.reference));
  const done = first.slice(0, 40).map((l) => {
    const [crawl, key, url] = l.split('\t') as [string, string, string];
    return { crawl, key, url, kind: 'known' as const, date: 0, metadata: {} };
  });
  expect(await moved.put(done)).toEqual(await s.reference.put(done));
  s.clock.now = UF_T0 + 4_000_000;
  expect(await served(moved)).toEqual(await served(s.reference));
  expect(await ufAnswers(moved)).toEqual(await ufAnswers(s.reference));
}

describe('frontier reshard moves the URL Frontier store', () => {
  test('from 1 partition to 6, then to 3: every answer as before, and GetURLs serves what its twin serves', async () => {
    const s = await scenario();
    const before = await ufAnswers(s.store);
    expect(await ufAnswers(s.reference)).toEqual(before);
    const expected = await totals(s.store);
    expect(expected.queues).toBe(525);
    expect(expected.held).toBeGreaterThan(300);
    expect(expected.completed).toBeGreaterThan(100);
    const oneKeys = await queueKeyNames(s.store);

    const up = await move(s, 1, 6);
    expect(up.urlFrontier).toMatchObject({
      plan: 'move',
      crawls: 4,
      present: 0,
      domainConfigs: 1,
      blacklisted: 1,
      ...expected,
    });
    const six = storeAt(redis, s.store.prefix, 6, s.clock);
    expect(await ufAnswers(six)).toEqual(before);
    await expectOnlyFence(s, 1, 6, oneKeys);
    await expectSettings(s, 6);
    const sixKeys = await queueKeyNames(six);
    expect(new Set((await six.queues('c1')).map((k) => six.partitionOf(k).partition)).size).toBe(6);

    const down = await move(s, 6, 3);
    expect(down.urlFrontier).toMatchObject({ plan: 'move', crawls: 4, present: 0, ...expected });
    const three = storeAt(redis, s.store.prefix, 3, s.clock);
    expect(await ufAnswers(three)).toEqual(before);
    await expectOnlyFence(s, 6, 3, sixKeys);
    await expectSettings(s, 3);
    expect(await redis.exists(reshardKey(s.store.prefix))).toBe(0);
    await expectSameServing(s, 3);
  });

  test('every command of a move is bounded, and every script it runs has keys of one slot', async () => {
    const s = await scenario();
    // The URL Frontier store's commands (the crawl frontier's part reads its own registries).
    const tags = [1, 6].flatMap((n) => storeAt(redis, s.store.prefix, n, s.clock).partitions.map(urlFrontierTag));
    const sent = await recordCommands(redis, () => move(s, 1, 6));
    const ours = sent.filter((c) => tags.some((tag) => String(c.args[0]).startsWith(tag)));
    const names = new Set(ours.map((c) => c.name));
    for (const unbounded of ['keys', 'scan', 'smembers', 'hkeys', 'hvals', 'dump'])
      expect(names.has(unbounded)).toBe(false);
    for (const { name, args } of ours) {
      if (name === 'hgetall') expect(String(args[0])).toMatch(/:info$/);
      if (name === 'zrange') expect(Number(args[2]) - Number(args[1])).toBeLessThan(1000);
      if (['hscan', 'sscan'].includes(name)) expect(Number(args[3])).toBeLessThanOrEqual(1000);
    }

    const again = await scenario();
    const calls = await recordScriptCalls(redis, () => move(again, 1, 3));
    const bigModes: string[] = [];
    expect(new Set(calls.map((c) => c.script))).toEqual(
      new Set(['reshard-uf-read', 'reshard-uf-put', 'reshard-uf-take']),
    );
    for (const { script, keys, argv } of calls) {
      const slots = new Set<number>();
      for (const key of keys) slots.add(Number(await redis.cluster('KEYSLOT', key)));
      expect(slots.size, script).toBe(1);
      if (script !== 'reshard-uf-put') continue;
      // A put restores at most 10,000 URLs of queues read whole: never the large queue, which is copied in pages.
      const bytes = argv.reduce<number>((n, a) => n + (Buffer.isBuffer(a) ? a.length : String(a).length), 0);
      expect(bytes).toBeLessThan(2_000_000);
      for (const [key, mode] of putModes(argv)) if (key === BIG_QUEUE.key) bigModes.push(mode);
    }
    expect(bigModes).toEqual(['c', 'g']);
  });

  test.each<[ReshardStep, number]>([
    ['uf-settings', 1],
    ['uf-put', 1],
    ['uf-put', 3],
    ['uf-take', 2],
  ])('a move stopped at %s #%i and run again loses nothing and duplicates nothing', async (step, nth) => {
    const s = await scenario();
    const before = await ufAnswers(s.store);
    const expected = await totals(s.store);
    const oneKeys = await queueKeyNames(s.store);
    await expect(move(s, 1, 6, dieAt(step, nth))).rejects.toThrow(`killed at ${step}`);

    // Until the move is finished, a server at either count is fenced out, and another move is refused.
    const message = `UFMOVE the URL frontier of prefix ${s.store.prefix} is being moved from 1 to 6 partitions`;
    for (const n of [1, 6]) {
      const at = storeAt(redis, s.store.prefix, n, s.clock);
      await expect(
        at.put([{ ...BIG_QUEUE, url: 'http://x.test/', kind: 'discovered', date: 0, metadata: {} }]),
      ).rejects.toThrow(message);
      await expect(at.getUrls({ maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 1 }, () => {})).rejects.toThrow(message);
      await expect(at.setDelay('c1', 'h1.site1.com', 5)).rejects.toThrow(message);
      await expect(at.setActive(false)).rejects.toThrow(message);
      await expect(at.deleteQueue('c2', 'h1.site1.com')).rejects.toThrow(message);
    }
    await expect(move(s, 1, 3)).rejects.toThrow('a move from 1 to 6 partitions is unfinished');

    const again = await move(s, 1, 6);
    expect(again.resumed).toBe(true);
    // Stopped between the put of a group of queues and its take: the second run finds them copied already.
    if (step === 'uf-put') expect(again.urlFrontier.present).toBeGreaterThan(0);
    else expect(again.urlFrontier.present).toBe(0);
    // What the first run moved and the second moved add up to every queue once.
    const six = storeAt(redis, s.store.prefix, 6, s.clock);
    expect(await totals(six)).toEqual(expected);
    expect(await ufAnswers(six)).toEqual(before);
    await expectOnlyFence(s, 1, 6, oneKeys);
    await expectSettings(s, 6);
    await expectSameServing(s, 6);
  });

  test('a move stopped after deleting the old partitions and run again only finishes it', async () => {
    const s = await scenario();
    const before = await ufAnswers(s.store);
    const oneKeys = await queueKeyNames(s.store);
    await expect(move(s, 1, 6, dieAt('delete', 1))).rejects.toThrow('killed at delete');
    const again = await move(s, 1, 6);
    expect(again).toMatchObject({ resumed: true, urlFrontier: { plan: 'move', queues: 0 } });
    expect(await ufAnswers(storeAt(redis, s.store.prefix, 6, s.clock))).toEqual(before);
    await expectOnlyFence(s, 1, 6, oneKeys);
    await expectSettings(s, 6);
  });

  test('a move from 6 partitions to 3 stopped twice and run again loses nothing and duplicates nothing', async () => {
    const s = await scenario();
    const before = await ufAnswers(s.store);
    await move(s, 1, 6);
    const sixKeys = await queueKeyNames(storeAt(redis, s.store.prefix, 6, s.clock));
    await expect(move(s, 6, 3, dieAt('uf-put', 2))).rejects.toThrow('killed at uf-put');
    await expect(move(s, 6, 3, dieAt('uf-take', 4))).rejects.toThrow('killed at uf-take');
    const again = await move(s, 6, 3);
    expect(again.resumed).toBe(true);
    expect(await ufAnswers(storeAt(redis, s.store.prefix, 3, s.clock))).toEqual(before);
    await expectOnlyFence(s, 6, 3, sixKeys);
    await expectSameServing(s, 3);
  });
});
