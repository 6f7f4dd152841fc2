import * as grpc from '@grpc/grpc-js';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { ownAddress, startUrlFrontierServer, type UrlFrontierServer } from '../../functions/url-frontier/server.ts';
import { allScripts } from '../../lib/redis/scripts.ts';
import {
  urlFrontierGlobalKeys,
  urlFrontierPartitions,
  urlFrontierQueueKeyList,
  urlFrontierTag,
} from '../../lib/redis/url-frontier/keys.ts';
import { queueKeyOf } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { PUT_BOUNDS } from '../../lib/url-frontier/calls.ts';
import { urlFrontierClientConstructor } from '../../lib/url-frontier/definition.ts';
import { type AnyClient, bidi, stream, unary } from '../helpers/grpc.ts';
import { recordScriptCalls } from '../helpers/scripts.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';
import { dropStores, UF_PARTITIONS } from '../helpers/url-frontier.ts';

const redis = clusterRedis();
const Client = urlFrontierClientConstructor();

interface Env {
  prefix: string;
  clock: { offset: number };
  store: UrlFrontierStore;
  server: UrlFrontierServer;
  client: AnyClient;
}

const open: { servers: UrlFrontierServer[]; clients: grpc.Client[]; stores: UrlFrontierStore[] } = {
  servers: [],
  clients: [],
  stores: [],
};

async function serve(
  prefix: string,
  clock: { offset: number },
  partitions: number,
): Promise<Omit<Env, 'prefix' | 'clock'>> {
  const store = new UrlFrontierStore(redis, prefix, { now: () => Date.now() + clock.offset, partitions });
  const server = await startUrlFrontierServer(store, { port: 0 });
  const client = new Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as AnyClient;
  open.servers.push(server);
  open.clients.push(client);
  open.stores.push(store);
  return { store, server, client };
}

async function env(partitions: number): Promise<Env> {
  const prefix = uniqueName('uf');
  const clock = { offset: 0 };
  return { prefix, clock, ...(await serve(prefix, clock, partitions)) };
}

afterEach(async () => {
  const stores = open.stores.splice(0);
  for (const c of open.clients.splice(0)) c.close();
  for (const s of open.servers.splice(0)) await s.close(100);
  await dropStores(redis, stores);
});
afterAll(() => redis.disconnect());

const info = (url: string, extra: object = {}) => ({ url, key: '', crawlID: '', metadata: {}, ...extra });
const discovered = (url: string, extra: object = {}) => ({ discovered: { info: info(url, extra) } });
const known = (url: string, date: number, extra: object = {}) => ({
  known: { info: info(url, extra), refetchable_from_date: date },
});
const nowS = () => Math.floor(Date.now() / 1000);

async function put(client: AnyClient, items: object[]) {
  return bidi<{ ID: string; status: string }>(client, 'PutURLs', items);
}

async function getUrls(client: AnyClient, req: object) {
  const urls = await stream<{ url: string; key: string; crawlID: string }>(client, 'GetURLs', {
    max_urls_per_queue: 0,
    max_queues: 0,
    delay_requestable: 0,
    ...req,
  });
  return urls.map((u) => u.url);
}

describe.each(UF_PARTITIONS)('URL Frontier API over Redis, FRONTIER_PARTITIONS=%i', (partitions) => {
  test('the queue key of a URL is its host as the reference cuts it', () => {
    expect(queueKeyOf('http://gac.icann.org?language_id=9')).toBe('gac.icann.org');
    expect(queueKeyOf('https://a.com:8080/x')).toBe('a.com');
    expect(queueKeyOf('http:///nohost')).toBeUndefined();
  });

  test('every uf-* script runs, each with keys of one slot (cluster mode)', async () => {
    const { prefix, client } = await env(partitions);
    const parts = urlFrontierPartitions(prefix, partitions);
    const calls = await recordScriptCalls(redis, async () => {
      await put(client, [discovered('http://a.com/1', { crawlID: 'c:x', key: 'a.com/b{c}' })]);
      await getUrls(client, { crawlID: 'c:x' });
      // A day later the hold has ended: GetStats releases it first (uf-release).
      const later = new UrlFrontierStore(redis, prefix, { partitions, now: () => Date.now() + 86_400_000 });
      expect((await later.stats('c:x')).inProcess).toBe(0);
      await unary(client, 'SetDelay', { crawlID: 'c:x', key: 'a.com/b{c}', delay_requestable: 2 });
      await unary(client, 'SetActive', { state: true });
      // As in a frontier stored by an older version: a new server's first look walks it (uf-index). Only ever one
      // partition: a partitioned frontier is indexed from its creation and never walked.
      for (const p of parts) await redis.hdel(urlFrontierGlobalKeys(p).state, 'indexed');
      await new UrlFrontierStore(redis, prefix, { partitions }).backlogTotal();
      await unary(client, 'PurgeURLs', { crawlID: 'c:x', days: 0 });
      await unary(client, 'DeleteCrawl', { value: 'c:x' });
    });
    expect(new Set(calls.map((c) => c.script))).toEqual(
      new Set(
        allScripts()
          .map((s) => s.name)
          .filter((n) => n.startsWith('uf-') && (partitions === 1 || n !== 'uf-index')),
      ),
    );
    const tags = parts.map(urlFrontierTag);
    if (partitions === 1) expect(tags).toEqual([`{${prefix}:uf}`]);
    for (const { script, keys } of calls) {
      expect(
        tags.some((tag) => keys.every((k) => k.startsWith(`${tag}:`))),
        script,
      ).toBe(true);
      const slots = new Set<number>();
      for (const k of keys) slots.add(Number(await redis.cluster('KEYSLOT', k)));
      expect(slots.size, script).toBe(1);
    }
    expect(urlFrontierQueueKeyList(parts[0], 'c:x', 'a.com/b{c}')).toHaveLength(14);
  });

  test('PutURLs dedups discovered URLs, acks by ID or URL, ends the stream; ListCrawls and DeleteCrawl', async () => {
    const { client } = await env(partitions);
    const acks = await put(client, [
      { ...discovered('http://a.com/1'), ID: 'one' },
      discovered('http://a.com/1'),
      discovered('http://b.com/1', { crawlID: 'DEFAULT' }),
      discovered('http://b.com/1', { crawlID: 'BESPOKE' }),
      discovered('nohost:///'),
      discovered(`http://${'x'.repeat(300)}.com/`),
    ]);
    expect(acks.map((a) => `${a.ID} ${a.status}`).sort()).toEqual(
      [
        'one OK',
        'http://a.com/1 SKIPPED',
        'http://b.com/1 OK',
        'http://b.com/1 OK',
        'nohost:/// SKIPPED',
        `http://${'x'.repeat(300)}.com/ SKIPPED`,
      ].sort(),
    );
    expect((await unary<{ values: string[] }>(client, 'ListCrawls', {})).values.sort()).toEqual(['BESPOKE', 'DEFAULT']);
    const stats = await unary<{ size: number; numberOfQueues: number; crawlID: string }>(client, 'GetStats', {});
    expect(stats).toMatchObject({ size: 2, numberOfQueues: 2, crawlID: 'DEFAULT' });
    expect(await unary(client, 'DeleteCrawl', { value: '' })).toEqual({ value: 2 });
    expect(await unary(client, 'DeleteCrawl', { value: 'nope' })).toEqual({ value: 0 });
    expect((await unary<{ values: string[] }>(client, 'ListCrawls', {})).values).toEqual(['BESPOKE']);
  });

  test('known updates overwrite, completed URLs are never served, refetch order is by date then URL', async () => {
    const { client } = await env(partitions);
    const now = nowS();
    await put(client, [
      known('http://a.com/late', now),
      known('http://a.com/early', now - 10_000),
      known('http://a.com/b-same', now - 5),
      known('http://a.com/a-same', now - 5),
      known('http://a.com/future', now + 3600),
      known('http://a.com/done', 0),
    ]);
    expect(await getUrls(client, { key: 'a.com', crawlID: 'DEFAULT' })).toEqual([
      'http://a.com/early',
      'http://a.com/a-same',
      'http://a.com/b-same',
      'http://a.com/late',
    ]);
    const stats = await unary<{ size: number; inProcess: number; counts: Record<string, number> }>(client, 'GetStats', {
      key: 'a.com',
    });
    expect(stats).toMatchObject({ size: 5, inProcess: 4, counts: { completed: 1, active_queues: 1 } });
    // A known update releases the hold and reschedules; a discovered one for a known URL is skipped.
    const acks = await put(client, [
      known('http://a.com/early', 0, { metadata: { m: { values: ['x'] } } }),
      discovered('http://a.com/done'),
    ]);
    expect(acks.map((a) => a.status).sort()).toEqual(['OK', 'SKIPPED']);
    const status = await unary<{ known: { refetchable_from_date: number }; creation_date: number }>(
      client,
      'GetURLStatus',
      { url: 'http://a.com/future' },
    );
    expect(status.known.refetchable_from_date).toBe(now + 3600);
    expect(status.creation_date).toBeGreaterThanOrEqual(now);
  });

  test('holds expire after delay_requestable; politeness delay between serves of a queue', async () => {
    const { client, clock } = await env(partitions);
    await put(client, [discovered('http://h.com/1'), discovered('http://h.com/2')]);
    const first = await getUrls(client, { key: 'h.com', crawlID: '', max_urls_per_queue: 1, delay_requestable: 2 });
    expect(first).toEqual(['http://h.com/1']);
    // max_urls_per_queue URLs already in flight: the queue is skipped even past the politeness delay.
    clock.offset = 1500;
    expect(await getUrls(client, { key: 'h.com', crawlID: '', max_urls_per_queue: 1 })).toEqual([]);
    expect(await unary(client, 'GetStats', { key: 'h.com' })).toMatchObject({ inProcess: 1 });
    // Within the default politeness delay (1 s) of the last serve: nothing, even with room for more.
    clock.offset = 2100;
    expect(await unary(client, 'GetStats', { key: 'h.com' })).toMatchObject({ inProcess: 0, size: 2 });
    expect(await getUrls(client, { key: 'h.com', crawlID: '', delay_requestable: 60 })).toEqual([
      'http://h.com/1',
      'http://h.com/2',
    ]);
    // SetDelay on the queue spaces serves: with 5 s, a serve 3 s later gives nothing, 6 s later gives the URLs.
    await unary(client, 'SetDelay', { key: 'h.com', delay_requestable: 5 });
    await put(client, [discovered('http://h.com/3')]);
    clock.offset = 5100;
    expect(await getUrls(client, { key: 'h.com', crawlID: '' })).toEqual([]);
    clock.offset = 8200;
    expect(await getUrls(client, { key: 'h.com', crawlID: '' })).toEqual(['http://h.com/3']);
  });

  test('two server instances never hand out the same held URL', async () => {
    const a = await env(partitions);
    const b = await serve(a.prefix, a.clock, partitions);
    const urls = Array.from({ length: 40 }, (_, i) => `http://q${i % 8}.com/${i}`);
    await put(
      a.client,
      urls.map((u) => discovered(u)),
    );
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        getUrls(i % 2 ? a.client : b.client, { anyCrawlID: {}, max_urls_per_queue: 2, delay_requestable: 60 }),
      ),
    );
    const all = results.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBeGreaterThan(0);
    // Round robin without a key, max_queues caps the queues that produced.
    a.clock.offset = 2000;
    const capped = await stream<{ key: string }>(b.client, 'GetURLs', { crawlID: 'DEFAULT', max_queues: 3 });
    expect(new Set(capped.map((u) => u.key)).size).toBeLessThanOrEqual(3);
    for (const u of capped) expect(all).not.toContain((u as unknown as { url: string }).url);
  });

  test('BlockQueueUntil and SetCrawlLimit; SetActive stops GetURLs', async () => {
    const { client } = await env(partitions);
    await put(client, [discovered('http://b.com/1'), known('http://c.com/1', 1), known('http://c.com/0', 0)]);
    await unary(client, 'BlockQueueUntil', { key: 'b.com', time: nowS() + 3600 });
    expect((await unary<{ values: string[] }>(client, 'ListQueues', {})).values).toEqual(['c.com']);
    expect((await unary<{ values: string[] }>(client, 'ListQueues', { include_inactive: true })).values).toEqual([
      'b.com',
      'c.com',
    ]);
    await unary(client, 'SetCrawlLimit', { key: 'c.com', limit: 1 });
    await expect(unary(client, 'SetCrawlLimit', { key: 'nope.com', limit: 1 })).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
    await unary(client, 'SetActive', { state: false });
    expect(await unary(client, 'GetActive', {})).toEqual({ state: false });
    expect(await getUrls(client, { crawlID: 'DEFAULT' })).toEqual([]);
    await unary(client, 'SetActive', { state: true });
    // b.com blocked, c.com at its limit of completed URLs.
    expect(await getUrls(client, { crawlID: 'DEFAULT' })).toEqual([]);
    await unary(client, 'BlockQueueUntil', { key: 'b.com', time: 0 });
    await unary(client, 'SetCrawlLimit', { key: 'c.com', limit: 0 });
    expect((await getUrls(client, { crawlID: 'DEFAULT' })).sort()).toEqual(['http://b.com/1', 'http://c.com/1']);
  });

  test('ListURLs, CountURLs, DeleteQueue, PurgeURLs, PutDiscovered, ListNodes, SetLogLevel', async () => {
    const { client, server } = await env(partitions);
    await put(client, [
      known('http://s.com/A', 0, { metadata: { source: { values: ['seed'] } } }),
      discovered('http://s.com/b'),
      discovered('http://t.com/c'),
    ]);
    const listed = await stream<{ known: { info: { url: string; key: string; crawlID: string } } }>(
      client,
      'ListURLs',
      { size: 0 },
    );
    expect(listed.map((l) => l.known.info.url).sort()).toEqual(['http://s.com/A', 'http://s.com/b', 'http://t.com/c']);
    expect(listed[0]?.known.info).toMatchObject({ key: 's.com', crawlID: 'DEFAULT' });
    expect(await stream(client, 'ListURLs', { start: 1, size: 1 })).toHaveLength(1);
    expect(await unary(client, 'CountURLs', {})).toEqual({ value: 3 });
    expect(await unary(client, 'CountURLs', { filter: '/a', ignoreCase: true })).toEqual({ value: 1 });
    expect(await unary(client, 'CountURLs', { filter: '/a' })).toEqual({ value: 0 });
    expect(await unary(client, 'DeleteQueue', { key: 't.com' })).toEqual({ value: 1 });
    expect(await unary(client, 'DeleteQueue', { key: 't.com' })).toEqual({ value: 0 });
    expect(await unary(client, 'PurgeURLs', { key: 's.com', days: 1 })).toEqual({ value: 0 });
    expect(await unary(client, 'PurgeURLs', { days: 0 })).toEqual({ value: 2 });
    const batches = await bidi<{ ID: string; statuses: string[] }>(client, 'PutDiscovered', [
      { ID: 'probe', items: [] },
      { ID: 'b1', items: [info('http://p.com/1'), info('http://p.com/1'), info('bad')] },
    ]);
    expect(batches.sort((x, y) => x.ID.localeCompare(y.ID))).toEqual([
      { ID: 'b1', statuses: ['OK', 'SKIPPED', 'OK'] },
      { ID: 'probe', statuses: [] },
    ]);
    expect(await unary(client, 'ListNodes', {})).toEqual({ values: [server.address] });
    expect(await unary(client, 'SetLogLevel', { package: 'x', level: 'DEBUG' })).toEqual({});
  });

  test('bad arguments get a status; the server keeps serving', async () => {
    const { client } = await env(partitions);
    await expect(unary(client, 'GetURLStatus', { url: 'http://nope.com/' })).rejects.toMatchObject({
      code: grpc.status.NOT_FOUND,
    });
    await expect(unary(client, 'GetURLStatus', { url: 'http:///x' })).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
    });
    await expect(getUrls(client, { key: 'a.com' })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    await expect(unary(client, 'DeleteQueue', {})).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect(await unary(client, 'GetActive', {})).toEqual({ state: true });
  });

  test('ListNodes: an address peers reach when bound to every interface, the advertised one when given', async () => {
    const prefix = uniqueName('uf');
    const store = new UrlFrontierStore(redis, prefix, { partitions });
    open.stores.push(store);
    const wide = await startUrlFrontierServer(store, { host: '0.0.0.0', port: 0 });
    open.servers.push(wide);
    const behind = await startUrlFrontierServer(store, { port: 0, advertise: 'frontier.internal:7071' });
    open.servers.push(behind);
    const ask = async (port: number) => {
      const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as AnyClient;
      open.clients.push(client);
      return unary<{ values: string[] }>(client, 'ListNodes', {});
    };
    expect(await ask(wide.port)).toEqual({ values: [`${ownAddress()}:${wide.port}`] });
    expect(ownAddress()).not.toBe('0.0.0.0');
    expect(await ask(behind.port)).toEqual({ values: ['frontier.internal:7071'] });
  });

  test('PutURLs SKIPS an item beyond the bounds (URL, crawl ID, metadata) and stores the ones at them', async () => {
    const { client } = await env(partitions);
    const long = (n: number) => `http://b.com/${'x'.repeat(n - 'http://b.com/'.length)}`;
    const acks = await put(client, [
      discovered(long(PUT_BOUNDS.urlChars)),
      discovered(long(PUT_BOUNDS.urlChars + 1)),
      discovered('http://b.com/c1', { crawlID: 'c'.repeat(PUT_BOUNDS.crawlIdChars) }),
      discovered('http://b.com/c2', { crawlID: 'c'.repeat(PUT_BOUNDS.crawlIdChars + 1) }),
      discovered('http://b.com/m1', { metadata: { m: { values: ['v'.repeat(PUT_BOUNDS.metadataBytes - 20)] } } }),
      discovered('http://b.com/m2', { metadata: { m: { values: ['v'.repeat(PUT_BOUNDS.metadataBytes)] } } }),
    ]);
    // Acks come as items complete (a SKIPPED one at once), each with its item's ID, here its URL.
    const status = new Map(acks.map((a) => [a.ID, a.status]));
    expect(
      [
        long(PUT_BOUNDS.urlChars),
        long(PUT_BOUNDS.urlChars + 1),
        'http://b.com/c1',
        'http://b.com/c2',
        'http://b.com/m1',
        'http://b.com/m2',
      ].map((u) => status.get(u)),
    ).toEqual(['OK', 'SKIPPED', 'OK', 'SKIPPED', 'OK', 'SKIPPED']);
    expect(await unary(client, 'CountURLs', { key: 'b.com' })).toEqual({ value: 2 });
    expect(await unary(client, 'CountURLs', { key: 'b.com', crawlID: 'c'.repeat(PUT_BOUNDS.crawlIdChars) })).toEqual({
      value: 1,
    });
  });

  test('state survives a restart: a new server and store see the same frontier', async () => {
    const a = await env(partitions);
    await put(a.client, [discovered('http://r.com/1'), known('http://r.com/2', 0)]);
    await unary(a.client, 'SetActive', { state: false });
    await a.server.close(100);
    const b = await serve(a.prefix, a.clock, partitions);
    expect(await unary(b.client, 'GetActive', {})).toEqual({ state: false });
    expect(await unary(b.client, 'CountURLs', { key: 'r.com' })).toEqual({ value: 2 });
    expect(await unary(b.client, 'GetStats', {})).toMatchObject({ size: 1, counts: { completed: 1 } });
  });
});
