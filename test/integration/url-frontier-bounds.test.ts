/**
 * The URL Frontier server's bounds (issue 30, defects 9-12), over the cluster-mode Redis and real gRPC calls: what an
 * empty GetURLs costs in Redis commands whatever the crawl holds, how long an error message may get, invalid UTF-8
 * in any string field, and how much of a PutURLs stream the server holds while Redis stores it.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { startUrlFrontierServer, type UrlFrontierServer } from '../../functions/url-frontier/server.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { urlFrontierCrawlKeys } from '../../lib/redis/url-frontier/keys.ts';
import type { PutItem } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { ECHO_MAX_CHARS, FIELD_MAX_CHARS } from '../../lib/url-frontier/calls.ts';
import { urlFrontierClientConstructor, urlFrontierServiceDefinition } from '../../lib/url-frontier/definition.ts';
import { type AnyClient, unary } from '../helpers/grpc.ts';
import { recordCommands } from '../helpers/scripts.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';
import { dropStores, UF_PARTITIONS } from '../helpers/url-frontier.ts';

const redis = clusterRedis();
const Client = urlFrontierClientConstructor();

const open: { servers: UrlFrontierServer[]; clients: grpc.Client[]; stores: UrlFrontierStore[] } = {
  servers: [],
  clients: [],
  stores: [],
};

afterEach(async () => {
  for (const c of open.clients.splice(0)) c.close();
  for (const s of open.servers.splice(0)) await s.close(100);
  await dropStores(redis, open.stores.splice(0));
});
afterAll(() => redis.disconnect());

function newStore(partitions: number, now?: () => number): UrlFrontierStore {
  const store = new UrlFrontierStore(redis, uniqueName('ufx'), { now, partitions });
  open.stores.push(store);
  return store;
}

async function serve(
  store: UrlFrontierStore,
  options: Parameters<typeof startUrlFrontierServer>[1] = {},
): Promise<{ server: UrlFrontierServer; client: AnyClient }> {
  const server = await startUrlFrontierServer(store, { port: 0, ...options });
  open.servers.push(server);
  return { server, client: connect(server) };
}

/** A client of `server` on its own HTTP/2 connection (grpc-js shares one between clients of a target otherwise). */
function connect(server: UrlFrontierServer): AnyClient {
  const client = new Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  }) as unknown as AnyClient;
  open.clients.push(client);
  return client;
}

/** Every command `run` sends on `client` (a script call counts once, with its KEYS), in order. */
async function commandsOf(client: RedisClient, run: () => Promise<unknown>): Promise<{ name: string; keys: number }[]> {
  return (await recordCommands(client, run)).map((c) => ({
    name: c.name,
    keys: c.name === 'evalsha' || c.name === 'eval' ? Number(c.args[1]) : 0,
  }));
}

const item = (crawl: string, key: string, url: string, kind: 'discovered' | 'known', date = 0): PutItem => ({
  crawl,
  key,
  url,
  kind,
  date,
  metadata: {},
});

describe.each(UF_PARTITIONS)(
  'GetURLs costs O(log n + queues served), not O(queues of the crawl) (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    /** A crawl of `n` queues whose URLs were all served and then completed: nothing in it is due, ever. */
    async function exhausted(n: number): Promise<UrlFrontierStore> {
      const store = newStore(partitions);
      const hosts = Array.from({ length: n }, (_, i) => `q${i}.example.com`);
      await store.put(hosts.map((h) => item('c', h, `https://${h}/`, 'discovered')));
      let served = 0;
      await store.getUrls({ crawl: 'c', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 60 }, (urls) => {
        served += urls.length;
      });
      expect(served).toBe(n);
      await store.put(hosts.map((h) => item('c', h, `https://${h}/`, 'known', 0)));
      return store;
    }

    /** The commands (and the KEYS of script calls: the queues a script touched) of one empty GetURLs. */
    async function emptyGetUrls(
      store: UrlFrontierStore,
    ): Promise<{ commands: number; keys: number; scripts: string[] }> {
      let urls = 0;
      const sent = await commandsOf(redis, () =>
        store.getUrls({ crawl: 'c', maxQueues: 1, maxUrlsPerQueue: 1, holdSeconds: 30 }, (u) => {
          urls += u.length;
        }),
      );
      expect(urls).toBe(0);
      return {
        commands: sent.length,
        keys: sent.reduce((n, c) => n + c.keys, 0),
        scripts: sent.filter((c) => c.keys > 0).map((c) => c.name),
      };
    }

    test('an empty GetURLs over 2,000 exhausted queues sends as few commands, touching as few keys, as over 20', async () => {
      const small = await emptyGetUrls(await exhausted(20));
      const large = await emptyGetUrls(await exhausted(2000));
      expect(large).toEqual(small);
      // The state (active, indexed), a look at the ended holds (none) and one claim of the due queues (none) per
      // partition: no queue is looked at.
      expect(large.commands).toBeLessThanOrEqual(1 + 2 * partitions);
      // The claims' KEYS: the crawl's due, its legacy rotation and the index over every crawl, in each partition,
      // and the holds looked at.
      expect(large.keys).toBeLessThanOrEqual(4 * partitions + 1);
    });

    test('the one due queue among 2,000 exhausted ones is served by a claim and one serve of that queue', async () => {
      const store = await exhausted(2000);
      await store.put([item('c', 'due.example.com', 'https://due.example.com/x', 'discovered')]);
      const got: string[] = [];
      const sent = await commandsOf(redis, () =>
        store.getUrls({ crawl: 'c', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 30 }, (u) => {
          got.push(...u.map((x) => x.url));
        }),
      );
      expect(got).toEqual(['https://due.example.com/x']);
      // HMGET state, a look at the ended holds (none) of each partition, claim (1 queue), serve (that queue: 6
      // frontier-wide keys, the crawl's due and its 2), claim (none); a claim (none) of each other partition.
      expect(sent.length).toBeLessThanOrEqual(4 + 2 * partitions - 1);
      expect(sent.reduce((n, c) => n + c.keys, 0)).toBeLessThanOrEqual(3 + 9 + 4 * partitions);
    });

    test('a queue comes back when a put, a hold ending, SetCrawlLimit or BlockQueueUntil lets it produce', async () => {
      const clock = { now: Date.UTC(2026, 10, 23, 12, 0, 0) };
      const store = newStore(partitions, () => clock.now);
      const all = async (max = 0) => {
        const out: string[] = [];
        await store.getUrls({ crawl: 'c', maxQueues: 0, maxUrlsPerQueue: max, holdSeconds: 10 }, (u) => {
          out.push(...u.map((x) => x.url));
        });
        return out.sort();
      };
      await store.put([
        item('c', 'a.com', 'http://a.com/1', 'discovered'),
        item('c', 'a.com', 'http://a.com/2', 'discovered'),
        item('c', 'b.com', 'http://b.com/1', 'discovered'),
        item('c', 'b.com', 'http://b.com/0', 'known', 0),
      ]);
      expect(await all(1)).toEqual(['http://a.com/1', 'http://b.com/1']);
      // a.com: one in flight (max 1) and the default politeness delay; b.com: nothing scheduled, one held.
      clock.now += 5000;
      expect(await all(1)).toEqual([]);
      // The holds end at +10 s: both URLs go back and are served again, a.com's second one too (no max now).
      clock.now += 5001;
      expect(await all()).toEqual(['http://a.com/1', 'http://a.com/2', 'http://b.com/1']);
      // Completed: b.com has nothing scheduled or held and leaves the index; a put brings it back.
      await store.put([item('c', 'b.com', 'http://b.com/1', 'known', 0)]);
      clock.now += 2000;
      expect(await all()).toEqual([]);
      await store.put([item('c', 'b.com', 'http://b.com/2', 'discovered')]);
      // At its crawl limit (2 completed, limit 2): not served, until the limit goes.
      await store.setCrawlLimit('c', 'b.com', 2);
      expect(await all()).toEqual([]);
      await store.setCrawlLimit('c', 'b.com', 0);
      expect(await all()).toEqual(['http://b.com/2']);
      // Blocked far ahead, then unblocked: served at once (after the politeness delay).
      await store.put([item('c', 'b.com', 'http://b.com/3', 'discovered')]);
      await store.blockQueueUntil('c', 'b.com', Math.floor(clock.now / 1000) + 86_400);
      clock.now += 2000;
      expect(await all()).toEqual([]);
      await store.blockQueueUntil('c', 'b.com', 0);
      expect(await all()).toEqual(['http://b.com/3']);
    });
  },
);

// A crawl stored by an older version is in a frontier of one partition: partitions came after the due index.
describe('GetURLs over a crawl stored by an older version', () => {
  test('a crawl stored before the due index (its queues in the old rotation) is served whole on the first GetURLs', async () => {
    const store = newStore(1);
    const hosts = ['a.com', 'b.com', 'c.com'];
    await store.put(hosts.map((h) => item('c', h, `http://${h}/`, 'discovered')));
    // What an older server left: the queues in `rot` (any scores), no `due`.
    const keys = urlFrontierCrawlKeys(store.partitions[0], 'c');
    await redis.del(keys.due);
    await redis.zadd(keys.legacyRotation, 1, 'a.com', 2, 'b.com', 3, 'c.com');
    const got: string[] = [];
    await store.getUrls({ crawl: 'c', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 30 }, (u) => {
      got.push(...u.map((x) => x.url));
    });
    expect(got.sort()).toEqual(hosts.map((h) => `http://${h}/`));
    expect(await redis.exists(keys.legacyRotation)).toBe(0);
  });
});

describe.each(UF_PARTITIONS)(
  'error messages quote a bounded excerpt of the input; field sizes are checked (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    test('a 100 KB crawl ID gets INVALID_ARGUMENT naming the field, in a short message; the same client goes on working', async () => {
      const { client } = await serve(newStore(partitions));
      const huge = 'c'.repeat(100_000);
      const calls: [string, object, string][] = [
        ['SetCrawlLimit', { key: 'a.com', limit: 1, crawlID: huge }, 'crawlID'],
        ['GetURLStatus', { url: 'http://a.com/', crawlID: huge }, 'crawlID'],
        ['GetStats', { crawlID: huge }, 'crawlID'],
        ['DeleteCrawl', { value: huge }, 'value'],
        ['SetCrawlLimit', { key: 'k'.repeat(FIELD_MAX_CHARS.key + 1), limit: 1 }, 'key'],
        ['GetURLStatus', { url: `http://a.com/${'u'.repeat(FIELD_MAX_CHARS.url)}` }, 'url'],
      ];
      for (const [method, req, field] of calls) {
        const error = (await unary(client, method, req).catch((e: unknown) => e)) as grpc.ServiceError;
        expect(error.code, method).toBe(grpc.status.INVALID_ARGUMENT);
        expect(error.details).toContain(`${method}: ${field}`);
        expect(error.details.length).toBeLessThan(200);
        // The same client (its one HTTP/2 session) still works.
        expect(await unary(client, 'GetActive', {})).toEqual({ state: true });
      }
    });

    test('a NOT_FOUND for a long URL or key quotes 200 characters of it with an ellipsis', async () => {
      const { client } = await serve(newStore(partitions));
      const url = `http://a.com/${'u'.repeat(8000)}`;
      const error = (await unary(client, 'GetURLStatus', { url }).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(error.code).toBe(grpc.status.NOT_FOUND);
      expect(error.details).toContain(`${url.slice(0, ECHO_MAX_CHARS)}"… (${url.length} characters)`);
      expect(error.details.length).toBeLessThan(3 * ECHO_MAX_CHARS);
      const key = 'k'.repeat(FIELD_MAX_CHARS.key);
      const missing = (await unary(client, 'SetCrawlLimit', { key, limit: 1 }).catch(
        (e: unknown) => e,
      )) as grpc.ServiceError;
      expect(missing.code).toBe(grpc.status.NOT_FOUND);
      expect(missing.details.length).toBeLessThan(3 * ECHO_MAX_CHARS);
    });
  },
);

describe.each(UF_PARTITIONS)(
  'invalid UTF-8 in any string field is rejected, naming the field (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    const service = urlFrontierServiceDefinition();
    /** Stands for the invalid bytes in a request built by the schema's own encoder (same length, so sizes hold). */
    const MARK = 'BADBYTES';
    // 0xff never occurs in UTF-8; c0 af is an overlong '/'; ed a0 80 a UTF-16 surrogate.
    const INVALID = Buffer.from([0x61, 0xff, 0x62, 0xc0, 0xaf, 0xed, 0xa0, 0x80]);

    function plain(method: string, req: object): Buffer {
      return Buffer.from((service[method] as grpc.MethodDefinition<object, object>).requestSerialize(req));
    }

    /** `req` encoded, with every MARK replaced by the invalid bytes. */
    function raw(method: string, req: object): Buffer {
      const bytes = plain(method, req);
      const mark = Buffer.from(MARK);
      let at = bytes.indexOf(mark);
      expect(at).toBeGreaterThanOrEqual(0);
      for (; at >= 0; at = bytes.indexOf(mark, at)) INVALID.copy(bytes, at);
      return bytes;
    }

    function rawUnary(client: AnyClient, method: string, bytes: Buffer): Promise<unknown> {
      const def = service[method] as grpc.MethodDefinition<object, object>;
      return new Promise((resolve, reject) => {
        client.makeUnaryRequest(
          def.path,
          (b: Buffer) => b,
          def.responseDeserialize,
          bytes,
          (e, res) => (e ? reject(e) : resolve(res)),
        );
      });
    }

    /** A raw PutURLs / PutDiscovered stream: the acks before it ended, and its error (undefined when it ended OK). */
    function rawBidi(
      client: AnyClient,
      method: string,
      messages: Buffer[],
    ): Promise<{ acks: object[]; error?: grpc.ServiceError }> {
      const def = service[method] as grpc.MethodDefinition<object, object>;
      return new Promise((resolve) => {
        const call = client.makeBidiStreamRequest(def.path, (b: Buffer) => b, def.responseDeserialize);
        const acks: object[] = [];
        call.on('data', (a: object) => acks.push(a));
        call.on('error', (error: grpc.ServiceError) => resolve({ acks, error }));
        call.on('end', () => resolve({ acks }));
        for (const m of messages) call.write(m);
        call.end();
      });
    }

    const info = (over: object) => ({ url: 'http://u.com/1', key: '', crawlID: '', metadata: {}, ...over });

    test('unary and server-streaming calls: url, key, crawlID', async () => {
      const { client } = await serve(newStore(partitions));
      const cases: [string, object, string][] = [
        ['GetURLStatus', { url: `http://a.com/${MARK}` }, 'url'],
        ['GetURLStatus', { url: 'http://a.com/', key: MARK }, 'key'],
        ['GetURLStatus', { url: 'http://a.com/', crawlID: MARK }, 'crawlID'],
        ['SetCrawlLimit', { key: 'a.com', limit: 1, crawlID: MARK }, 'crawlID'],
        ['DeleteCrawl', { value: MARK }, 'value'],
        ['CountURLs', { filter: MARK }, 'filter'],
      ];
      for (const [method, req, field] of cases) {
        const error = (await rawUnary(client, method, raw(method, req)).catch((e: unknown) => e)) as grpc.ServiceError;
        expect(error.code, `${method} ${field}`).toBe(grpc.status.INVALID_ARGUMENT);
        expect(error.details).toBe(`${method}: ${field} is not valid UTF-8`);
      }
      const def = service.GetURLs as grpc.MethodDefinition<object, object>;
      const error = await new Promise<grpc.ServiceError>((resolve) => {
        const call = client.makeServerStreamRequest(
          def.path,
          (b: Buffer) => b,
          def.responseDeserialize,
          raw('GetURLs', { crawlID: MARK }),
        );
        call.on('data', () => undefined);
        call.on('error', resolve);
      });
      expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(error.details).toBe('GetURLs: crawlID is not valid UTF-8');
    });

    test('PutURLs and PutDiscovered: every string of an item; the items before it are acked, none after is stored', async () => {
      const store = newStore(partitions);
      const { client } = await serve(store);
      const cases: [object, string][] = [
        [{ discovered: { info: info({ url: `http://u.com/${MARK}` }) } }, 'discovered.info.url'],
        [{ discovered: { info: info({ key: MARK }) } }, 'discovered.info.key'],
        [{ known: { info: info({ crawlID: MARK }), refetchable_from_date: 0 } }, 'known.info.crawlID'],
        [{ discovered: { info: info({ metadata: { [MARK]: { values: ['v'] } } }) } }, 'discovered.info.metadata name'],
        [
          { discovered: { info: info({ metadata: { m: { values: ['ok', MARK] } } }) } },
          'discovered.info.metadata values',
        ],
        [{ ID: MARK, discovered: { info: info({}) } }, 'ID'],
      ];
      for (const [i, [item, field]] of cases.entries()) {
        const before = plain('PutURLs', { ID: 'first', discovered: { info: info({ url: `http://ok.com/${i}` }) } });
        const after = plain('PutURLs', { discovered: { info: info({ url: 'http://ok.com/after' }) } });
        const { acks, error } = await rawBidi(client, 'PutURLs', [before, raw('PutURLs', item), after]);
        expect(error?.code, field).toBe(grpc.status.INVALID_ARGUMENT);
        expect(error?.details).toBe(`PutURLs: ${field} is not valid UTF-8`);
        expect(acks).toEqual([{ ID: 'first', status: 'OK' }]);
      }
      const batch = await rawBidi(client, 'PutDiscovered', [
        raw('PutDiscovered', { ID: 'b', items: [info({ url: 'http://ok.com/batch' }), info({ crawlID: MARK })] }),
      ]);
      expect(batch.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(batch.error?.details).toBe('PutDiscovered: items.crawlID is not valid UTF-8');
      // Nothing of the rejected messages, nor after them, was stored: only the first item of every stream.
      expect(await store.countUrls('DEFAULT', 'ok.com')).toBe(cases.length);
      expect(await store.countUrls('DEFAULT', 'u.com')).toBe(0);
      expect(await store.crawls()).toEqual(['DEFAULT']);
    });

    test('a real U+FFFD (EF BF BD, valid UTF-8) is stored as sent, distinct from other URLs', async () => {
      const store = newStore(partitions);
      const { client } = await serve(store);
      const { acks, error } = await rawBidi(client, 'PutURLs', [
        Buffer.from(
          (service.PutURLs as grpc.MethodDefinition<object, object>).requestSerialize({
            discovered: { info: info({ url: 'http://u.com/\uFFFD', metadata: { m: { values: ['\uFFFD'] } } }) },
          }),
        ),
      ]);
      expect(error).toBeUndefined();
      expect(acks).toEqual([{ ID: 'http://u.com/\uFFFD', status: 'OK' }]);
      expect(await store.urlStatus('DEFAULT', 'u.com', 'http://u.com/\uFFFD')).toMatchObject({
        metadata: { m: ['\uFFFD'] },
      });
    });
  },
);

describe.each(UF_PARTITIONS)(
  'PutURLs holds a bounded number of bytes, whatever the clients send and however slow Redis is (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    test('two clients streaming 10 KB of metadata per item: what the store holds never exceeds the budget', async () => {
      const real = newStore(partitions);
      // The real store behind a gate: its puts wait (Redis "stalls") until the gate opens. What the puts hold is
      // measured here, outside the server, in the bytes the items carry.
      let openGate: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        openGate = resolve;
      });
      let held = 0;
      let peak = 0;
      const slow = Object.create(real) as UrlFrontierStore;
      slow.put = async (items: PutItem[]) => {
        const bytes = items.reduce((n, i) => n + i.url.length + JSON.stringify(i.metadata).length, 0);
        held += bytes;
        peak = Math.max(peak, held);
        try {
          await gate;
          return await real.put(items);
        } finally {
          held -= bytes;
        }
      };
      const budget = 256 * 1024;
      const { server } = await serve(slow, { putBufferBytes: budget });
      const value = 'v'.repeat(10_000);
      const perStream = 1000; // 10 MB a stream, 40 x the budget
      // The budget plus one message per stream (each reads the message in hand before it stops).
      const bound = budget + 2 * (value.length + 100);

      const stream = (client: AnyClient, name: string) => {
        const call = (client.PutURLs as () => grpc.ClientDuplexStream<object, { status: string }>).call(client);
        const state = { written: 0, acks: [] as string[] };
        const ended = new Promise<void>((resolve, reject) => {
          call.on('data', (a: { status: string }) => state.acks.push(a.status));
          call.on('error', reject);
          call.on('end', () => resolve());
        });
        const writing = (async () => {
          for (let i = 0; i < perStream; i++) {
            const url = `https://${name}${i % 20}.example.org/${i}`;
            const info = { url, key: '', crawlID: 'mem', metadata: { m: { values: [value] } } };
            state.written++;
            if (!call.write({ ID: '', discovered: { info } }))
              await new Promise((resolve) => call.once('drain', resolve));
          }
          call.end();
        })();
        const done = Promise.all([writing, ended]);
        done.catch(() => undefined); // awaited below, unless an assertion fails first
        return { state, done };
      };
      const a = stream(connect(server), 'a');
      const b = stream(connect(server), 'b');
      // Until both streams wait for the budget (or the store holds more than the bound, or the clients wrote it all:
      // either means the server read ahead without one), polled, 20 s at most.
      for (let i = 0; i < 2000; i++) {
        if (held > bound || server.putBudget?.waiting === 2) break;
        if (a.state.written === perStream && b.state.written === perStream) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(held).toBeGreaterThan(0);
      expect(held).toBeLessThanOrEqual(bound);
      expect(server.putBudget.waiting).toBe(2);
      expect(a.state.written + b.state.written).toBeLessThan(perStream);

      openGate();
      await Promise.all([a.done, b.done]);
      expect([...a.state.acks, ...b.state.acks]).toEqual(Array(2 * perStream).fill('OK'));
      expect(await real.countUrls('mem', undefined)).toBe(2 * perStream);
      expect(peak).toBeLessThanOrEqual(bound);
      expect(server.putBudget.peak).toBeLessThanOrEqual(bound);
      expect(server.putBudget.used).toBe(0);
    });
  },
);
