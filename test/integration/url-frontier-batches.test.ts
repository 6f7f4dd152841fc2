/**
 * The URL Frontier server's batched paths, over the cluster-mode Redis: several gRPC messages per HTTP/2 write
 * (lib/url-frontier/frames.ts), read back with a bare node:http2 client that parses the gRPC framing itself, and
 * the store's script calls that take many queues at once (uf-put.lua, uf-serve.lua).
 */
import { connect } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { startUrlFrontierServer, type UrlFrontierServer } from '../../functions/url-frontier/server.ts';
import type { PutItem } from '../../lib/redis/url-frontier/model.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { BIDI_MAX_UNACKED } from '../../lib/url-frontier/calls.ts';
import { urlFrontierClientConstructor, urlFrontierServiceDefinition } from '../../lib/url-frontier/definition.ts';
import { FRAME_CHUNK_BYTES } from '../../lib/url-frontier/frames.ts';
import { PUT_BATCH_MAX } from '../../lib/url-frontier/service.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';
import { dropStores, UF_PARTITIONS } from '../helpers/url-frontier.ts';

const redis = clusterRedis();
const stores: UrlFrontierStore[] = [];
const servers: UrlFrontierServer[] = [];

function store(partitions: number, now?: () => number): UrlFrontierStore {
  const s = new UrlFrontierStore(redis, uniqueName('ufb'), { now, partitions });
  stores.push(s);
  return s;
}

afterEach(async () => {
  for (const s of servers.splice(0)) await s.close(100);
  await dropStores(redis, stores.splice(0));
});
afterAll(() => redis.disconnect());

const discovered = (crawl: string, key: string, url: string): PutItem => ({
  crawl,
  key,
  url,
  kind: 'discovered',
  date: 0,
  metadata: {},
});

type AnyClient = grpc.Client & Record<string, (...a: unknown[]) => unknown>;

/** A server over `s` on a free port (closed after the test) and a grpc-js client of it (the caller closes it). */
async function serveAndConnect(s: UrlFrontierStore): Promise<AnyClient> {
  const server = await startUrlFrontierServer(s, { port: 0 });
  servers.push(server);
  const Client = urlFrontierClientConstructor();
  return new Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as AnyClient;
}

/** `n` URLs over `queues` hosts, interleaved (host i mod queues), so every batch spans many queues. */
function spread(crawl: string, n: number, queues: number): PutItem[] {
  return Array.from({ length: n }, (_, i) => {
    const host = `h${i % queues}.example.org`;
    return discovered(crawl, host, `https://${host}/page/${i}`);
  });
}

/** A GetURLs request over a bare HTTP/2 stream: the DATA chunks received, the messages and grpc-status. */
async function rawGetUrls(
  port: number,
  request: object,
): Promise<{ chunks: number; messages: Buffer[]; status: string | undefined }> {
  const def = urlFrontierServiceDefinition().GetURLs as grpc.MethodDefinition<object, object>;
  const body = def.requestSerialize(request);
  const framed = Buffer.alloc(5 + body.length);
  framed.writeUInt32BE(body.length, 1);
  body.copy(framed, 5);
  const session = connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': def.path,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const parts: Buffer[] = [];
      let chunks = 0;
      let status: string | undefined;
      req.on('data', (d: Buffer) => {
        chunks++;
        parts.push(d);
      });
      req.on('trailers', (t) => {
        status = String(t['grpc-status']);
      });
      req.on('error', reject);
      req.on('end', () => {
        const all = Buffer.concat(parts);
        const messages: Buffer[] = [];
        let at = 0;
        while (at < all.length) {
          if (all.length - at < 5) return reject(new Error('truncated gRPC frame header'));
          const len = all.readUInt32BE(at + 1);
          messages.push(all.subarray(at + 5, at + 5 + len));
          at += 5 + len;
        }
        if (at !== all.length) return reject(new Error('truncated gRPC message'));
        resolve({ chunks, messages, status });
      });
      req.end(framed);
    });
  } finally {
    session.close();
  }
}

describe.each(UF_PARTITIONS)(
  'URL Frontier: several messages per HTTP/2 write (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    test('a GetURLs stream of 3,000 URLs arrives whole, in far fewer DATA chunks than messages', async () => {
      const s = store(partitions);
      await s.put(spread('c', 3000, 30));
      const server = await startUrlFrontierServer(s, { port: 0 });
      servers.push(server);
      const res = await rawGetUrls(server.port, {
        max_urls_per_queue: 0,
        max_queues: 0,
        key: '',
        delay_requestable: 30,
        crawlID: 'c',
      });
      expect(res.status).toBe('0');
      expect(res.messages).toHaveLength(3000);
      const decode = (urlFrontierServiceDefinition().GetURLs as grpc.MethodDefinition<object, { url: string }>)
        .responseDeserialize;
      const urls = new Set(res.messages.map((m) => decode(m).url));
      expect(urls.size).toBe(3000);
      expect(urls.has('https://h7.example.org/page/2107')).toBe(true);
      // One message per write would be 3,000 chunks; batched, a chunk carries up to FRAME_CHUNK_BYTES (HTTP/2 may
      // split it into 16 KiB frames).
      const bytes = res.messages.reduce((n, m) => n + 5 + m.length, 0);
      expect(res.chunks).toBeLessThan(Math.max(60, (4 * bytes) / FRAME_CHUNK_BYTES + 40));
    });

    test('a client that cancels mid-stream: the server stops taking URLs for it, and goes on serving others', async () => {
      const s = store(partitions);
      await s.put(spread('c', 20_000, 200));
      const client = await serveAndConnect(s);
      try {
        const got = await new Promise<number>((resolve) => {
          const call = (client.GetURLs as (r: object) => grpc.ClientReadableStream<object>).call(client, {
            max_urls_per_queue: 0,
            max_queues: 0,
            key: '',
            delay_requestable: 600,
            crawlID: 'c',
          });
          let n = 0;
          call.on('data', () => {
            if (++n === 10) call.cancel();
          });
          call.on('error', () => resolve(n));
          call.on('end', () => resolve(n));
        });
        expect(got).toBeGreaterThanOrEqual(10);
        const crawls = await new Promise<{ values: string[] }>((resolve, reject) =>
          (client.ListCrawls as (r: object, cb: (e: Error | null, r: { values: string[] }) => void) => void).call(
            client,
            { local: false },
            (e, r) => (e ? reject(e) : resolve(r)),
          ),
        );
        expect(crawls.values).toEqual(['c']);
        const stats = await s.stats('c');
        expect(stats.inProcess).toBeGreaterThanOrEqual(10);
        // The server stopped serving queues when the client left: far from all 20,000 URLs were taken (held).
        expect(stats.inProcess).toBeLessThan(10_000);
        expect(stats.size).toBe(20_000);
      } finally {
        client.close();
      }
    });
  },
);

describe.each(UF_PARTITIONS)('URL Frontier PutURLs backpressure (FRONTIER_PARTITIONS=%i)', (partitions) => {
  test('a client that does not read its acks stalls long before its stream is stored; once it reads, every item is', async () => {
    const s = store(partitions);
    const client = await serveAndConnect(s);
    const n = 30_000;
    try {
      const call = (client.PutURLs as () => grpc.ClientDuplexStream<object, { status: string }>).call(client);
      let written = 0;
      const writing = (async () => {
        for (; written < n; ) {
          const url = `https://bp${written % 50}.example.org/${written}`;
          written++;
          if (!call.write({ ID: '', discovered: { info: { url, key: '', crawlID: 'bp', metadata: {} } } }))
            await new Promise((resolve) => call.once('drain', resolve));
        }
        call.end();
      })();
      // Acks unread: the writer stalls well before the end (the server stopped reading).
      let last = -1;
      for (let i = 0; i < 40 && written !== last; i++) {
        last = written;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(written).toBeLessThan(n);
      const stored = await s.countUrls('bp', undefined);
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(n);
      // Reading the acks lets everything through.
      const acks = await new Promise<number>((resolve, reject) => {
        let count = 0;
        call.on('data', () => {
          count++;
        });
        call.on('error', reject);
        call.on('end', () => resolve(count));
      });
      await writing;
      expect(acks).toBe(n);
      expect(await s.countUrls('bp', undefined)).toBe(n);
    } finally {
      client.close();
    }
  });
});

describe.each(UF_PARTITIONS)(
  'URL Frontier PutURLs backpressure when Redis is slow (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    test('the server reads at most BIDI_MAX_UNACKED items ahead of what Redis stored', async () => {
      const s = store(partitions);
      // The real store, its put held at a gate: Redis "stalls" until the gate opens.
      let open: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      let received = 0;
      const slow = Object.create(s) as UrlFrontierStore;
      slow.put = async (items: PutItem[]) => {
        received += items.length;
        await gate;
        return s.put(items);
      };
      const client = await serveAndConnect(slow);
      const n = 20_000;
      try {
        const call = (client.PutURLs as () => grpc.ClientDuplexStream<object, { status: string }>).call(client);
        let acks = 0;
        const ended = new Promise<void>((resolve, reject) => {
          call.on('data', () => {
            acks++;
          });
          call.on('error', reject);
          call.on('end', () => resolve());
        });
        const writing = (async () => {
          for (let i = 0; i < n; i++) {
            const url = `https://slow${i % 50}.example.org/${i}`;
            if (!call.write({ ID: '', discovered: { info: { url, key: '', crawlID: 'slow', metadata: {} } } }))
              await new Promise((resolve) => call.once('drain', resolve));
          }
          call.end();
        })();
        // Until the server has stopped taking items (the count holds for 500 ms), 10 s at most.
        for (let i = 0, last = -1; i < 40; i++) {
          await new Promise((resolve) => setTimeout(resolve, 250));
          if (received > 0 && received === last) break;
          last = received;
        }
        expect(received).toBeGreaterThan(0);
        expect(received).toBeLessThanOrEqual(BIDI_MAX_UNACKED + PUT_BATCH_MAX);
        open();
        await writing;
        await ended;
        expect(acks).toBe(n);
        expect(await s.countUrls('slow', undefined)).toBe(n);
      } finally {
        client.close();
      }
    });
  },
);

describe.each(UF_PARTITIONS)(
  'URL Frontier store: many queues per script call (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    test('put over 300 interleaved queues (two calls): statuses in input order, duplicates SKIPPED', async () => {
      const s = store(partitions);
      const items = spread('c', 900, 300);
      // duplicates of earlier items, one per queue of the first 50, and a second crawl in the same batch
      const dups = items.slice(0, 50).map((it) => ({ ...it }));
      const other = spread('d', 10, 5);
      const statuses = await s.put([...items, ...dups, ...other]);
      expect(statuses.slice(0, 900).every((x) => x === 'OK')).toBe(true);
      expect(statuses.slice(900, 950).every((x) => x === 'SKIPPED')).toBe(true);
      expect(statuses.slice(950)).toEqual(Array(10).fill('OK'));
      expect(await s.queues('c')).toHaveLength(300);
      expect(await s.queues('d')).toHaveLength(5);
      expect((await s.stats('c')).size).toBe(900);
    });

    test('one put of 2,500 items for one queue spans calls and keeps their order: a late duplicate is SKIPPED', async () => {
      const s = store(partitions);
      const items = Array.from({ length: 2500 }, (_, i) =>
        discovered('c', 'one.example.org', `https://one.example.org/${i % 2400}`),
      );
      const statuses = await s.put(items);
      expect(statuses.slice(0, 2400).every((x) => x === 'OK')).toBe(true);
      expect(statuses.slice(2400).every((x) => x === 'SKIPPED')).toBe(true);
      expect((await s.stats('c')).size).toBe(2400);
    });

    test('serveQueues serves each queue its own URLs in its order, metadata only where stored', async () => {
      const s = store(partitions);
      const items = spread('c', 60, 20);
      const withMeta = { ...discovered('c', 'h3.example.org', 'https://h3.example.org/meta'), metadata: { d: ['1'] } };
      await s.put([...items, withMeta]);
      await s.setDelay('c', '', 0); // no politeness delay: the second serve below comes at once
      const keys = Array.from({ length: 20 }, (_, i) => `h${i}.example.org`);
      const served = await s.serveQueues('c', keys, 2, 30);
      expect(served).toHaveLength(20);
      served.forEach((urls, q) => {
        expect(urls).toHaveLength(2);
        for (const u of urls) {
          expect(u.key).toBe(keys[q]);
          expect(new URL(u.url).host).toBe(keys[q]);
        }
      });
      const rest = await s.serveQueues('c', ['h3.example.org', 'h4.example.org', 'nowhere.example.org'], 0, 30);
      const h3 = [...(served[3] ?? []), ...(rest[0] ?? [])];
      expect(h3).toHaveLength(4);
      expect(h3.find((u) => u.url.endsWith('/meta'))?.metadata).toEqual({ d: ['1'] });
      expect(h3.filter((u) => !u.url.endsWith('/meta')).every((u) => Object.keys(u.metadata).length === 0)).toBe(true);
      expect(rest[1]).toHaveLength(1);
      expect(rest[2]).toEqual([]);
    });
  },
);

describe.each(UF_PARTITIONS)(
  'URL Frontier store: admin reads of a big queue, a page at a time (FRONTIER_PARTITIONS=%i)',
  (partitions) => {
    test('ListURLs, CountURLs and PurgeURLs over 2,700 URLs (several HSCAN pages) see each URL once', async () => {
      const clock = { now: Date.UTC(2026, 0, 10) };
      const s = store(partitions, () => clock.now);
      const urls = (from: number, n: number) =>
        Array.from({ length: n }, (_, i) =>
          discovered('c', 'big.example.org', `https://big.example.org/p/${from + i}`),
        );
      await s.put(urls(0, 1500));
      clock.now += 2 * 86_400_000;
      await s.put(urls(1500, 1200));

      const listed: string[] = [];
      await s.listUrls('c', 'big.example.org', 0, 10_000, undefined, (r) => {
        listed.push(r.url);
      });
      expect(listed).toHaveLength(2700);
      expect(new Set(listed).size).toBe(2700);
      expect(listed).toEqual([...listed].sort());
      expect(await s.countUrls('c', 'big.example.org', (u) => u.endsWith('7'))).toBe(270);

      // Older than 1 day: the first 1,500 go, the 1,200 stored two days later stay.
      expect(await s.purge('c', 'big.example.org', 1)).toBe(1500);
      expect(await s.countUrls('c', 'big.example.org')).toBe(1200);
      expect((await s.stats('c')).size).toBe(1200);
    });
  },
);
