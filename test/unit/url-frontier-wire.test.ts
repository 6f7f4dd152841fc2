/**
 * GetURLs frames encoded from uf-serve's packed reply (lib/url-frontier/wire.ts) are byte for byte what
 * protobufjs makes of the same URLInfo, and FrameWriter (frames.ts) falls back to one call.write per message
 * when the grpc-js internals it needs are missing.
 */
import { EventEmitter } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, test } from 'vitest';
import { type Metadata, type PackedQueue, servedUrls, urlMember } from '../../lib/redis/url-frontier/model.ts';
import { urlFrontierServiceDefinition } from '../../lib/url-frontier/definition.ts';
import { FrameWriter } from '../../lib/url-frontier/frames.ts';
import { encodeServedFrames } from '../../lib/url-frontier/wire.ts';

const GET = urlFrontierServiceDefinition().GetURLs as grpc.MethodDefinition<object, object>;

/** A queue's URLs packed as uf-serve.lua packs them. */
function pack(crawl: string, key: string, urls: [string, Metadata?][]): PackedQueue {
  const parts = urls.map(([url, meta]) => {
    const member = urlMember(key, url);
    const json = meta ? JSON.stringify(meta) : '';
    return `${Buffer.byteLength(member)}:${member}${Buffer.byteLength(json)}:${json}`;
  });
  return { crawl, key, packed: Buffer.from(parts.join('')), count: urls.length };
}

/** The messages of a run of gRPC frames. */
function frames(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    expect(bytes[at]).toBe(0);
    const len = bytes.readUInt32BE(at + 1);
    out.push(bytes.subarray(at + 5, at + 5 + len));
    at += 5 + len;
  }
  return out;
}

describe('GetURLs frames from the packed reply', () => {
  const cases: [string, string, [string, Metadata?][]][] = [
    ['DEFAULT', 'a.com', [['http://a.com/x'], ['https://a.com/'], ['https://a.com?q=1'], ['http://a.com:8080/p']]],
    ['c', 'b.org', [['https://b.org/ü/日本?x=é'], [`https://b.org/${'long/'.repeat(40)}`]]],
    ['crawl-ü', 'k', [['https://elsewhere.net/not-the-key'], ['\u0001odd'], ['ftp://k/x']]],
    [
      'm',
      'meta.io',
      [
        ['https://meta.io/1', { depth: ['2'], tags: ['a', 'bé', ''], empty: [] }],
        ['https://meta.io/2', {}],
        ['https://meta.io/3', { ключ: ['значение'] }],
      ],
    ],
    ['big', 'v.net', [[`https://v.net/${'x'.repeat(20_000)}`, { big: ['y'.repeat(300)] }]]],
  ];

  test.each(cases)('crawl %s, queue %s: each frame equals protobufjs’s URLInfo', (crawl, key, urls) => {
    const queue = pack(crawl, key, urls);
    const messages = frames(encodeServedFrames(queue));
    const expected = servedUrls(queue);
    expect(expected.map((u) => u.url)).toEqual(urls.map(([u]) => u));
    expect(messages).toHaveLength(urls.length);
    messages.forEach((m, i) => {
      const u = expected[i];
      if (!u) throw new Error('missing URL');
      const metadata = Object.fromEntries(Object.entries(u.metadata).map(([k, v]) => [k, { values: v }]));
      const reference = GET.responseSerialize({ url: u.url, key, crawlID: crawl, metadata });
      expect(m.equals(reference), `URL ${i}`).toBe(true);
      expect(GET.responseDeserialize(m)).toMatchObject({ url: u.url, key, crawlID: crawl });
    });
  });

  test('an empty reply is no frame; a malformed one is an error, not a wrong message', () => {
    expect(encodeServedFrames({ crawl: 'c', key: 'k', packed: Buffer.alloc(0), count: 0 })).toHaveLength(0);
    for (const bad of ['5:abc0:', 'x:abc0:', '3:abc', '3:abc9:', ':0:'])
      expect(() => encodeServedFrames({ crawl: 'c', key: 'k', packed: Buffer.from(bad), count: 1 }), bad).toThrow(
        /malformed/,
      );
  });
});

describe('FrameWriter without the grpc-js internals', () => {
  test('writes one message per call.write and waits for drain when the call is full', async () => {
    const written: object[] = [];
    let full = false;
    const call = Object.assign(new EventEmitter(), {
      write: (m: object) => {
        written.push(m);
        return !full;
      },
      end: () => written.push({ end: true }),
    }) as unknown as grpc.ServerWritableStream<unknown, unknown>;
    const writer = new FrameWriter(call);
    expect(writer.batched).toBe(false);
    expect(writer.write({ url: 'a' })).toBeUndefined();
    full = true;
    const waiting = writer.write({ url: 'b' });
    expect(waiting).toBeInstanceOf(Promise);
    (call as unknown as EventEmitter).emit('drain');
    await waiting;
    expect(() => writer.writeFramed(Buffer.alloc(5))).toThrow(/batched/);
    await writer.end();
    expect(written).toEqual([{ url: 'a' }, { url: 'b' }, { end: true }]);
  });
});
