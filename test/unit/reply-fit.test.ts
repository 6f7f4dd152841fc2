/**
 * Replies cut to fit a Kafka message (lib/monitor/reply-fit.ts): an info reply of a crawl over tens of thousands
 * of domains keeps the busiest ones and says so; a small reply goes out byte for byte as before.
 */
import { describe, expect, it } from 'vitest';
import { replyValue } from '../../lib/monitor/reply-fit.ts';

const LIMIT = 1_000_000;

function domains(n: number, from = 0): Record<string, { low_priority: number; high_priority: number; total: number }> {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => {
      const total = (i * 7919) % 1000;
      return [`a-rather-long-domain-name-${from + i}.com`, { low_priority: 1, high_priority: 2, total }];
    }),
  );
}

describe('replyValue', () => {
  it('sends a reply that fits exactly as JSON.stringify does', () => {
    const reply = { server_time: 1, uuid: 'u', appid: 'a', crawlid: 'c', domains: domains(10), total_domains: 10 };
    expect(replyValue(reply, LIMIT)).toBe(JSON.stringify(reply));
  });

  it('cuts a crawl-form info reply of 50,000 domains to the busiest that fit, keeping the totals', () => {
    const all = domains(50_000);
    const reply = {
      server_time: 1,
      uuid: 'u',
      appid: 'a',
      crawlid: 'c',
      spiderid: 'link',
      total_pending: 9,
      total_domains: 50_000,
      domains: all,
    };
    expect(Buffer.byteLength(JSON.stringify(reply))).toBeGreaterThan(LIMIT);
    const value = replyValue(reply, LIMIT);
    expect(Buffer.byteLength(value)).toBeLessThanOrEqual(LIMIT);
    const out = JSON.parse(value) as typeof reply & { cut: { domains_per_crawl: number; limit_bytes: number } };
    const listed = Object.keys(out.domains);
    expect(listed.length).toBe(out.cut.domains_per_crawl);
    expect(listed.length).toBeGreaterThan(5_000);
    expect(out).toMatchObject({ uuid: 'u', crawlid: 'c', total_pending: 9, total_domains: 50_000 });
    expect(out.cut.limit_bytes).toBe(LIMIT);
    // The busiest first: no domain left out is busier than one listed.
    const minListed = Math.min(...listed.map((d) => all[d]?.total ?? 0));
    const left = Object.entries(all).filter(([d]) => !(d in out.domains));
    expect(Math.max(...left.map(([, v]) => v.total))).toBeLessThanOrEqual(minListed);
    // As many as fit: within one domain entry (about 80 bytes) of the limit less the record's overhead.
    expect(Buffer.byteLength(value)).toBeGreaterThan(LIMIT - 1024 - 200);
  });

  it('cuts an app-form reply first per crawl, then the list of crawls, busiest first', () => {
    const crawlids = Object.fromEntries(
      Array.from({ length: 20_000 }, (_, i) => [
        `crawl-${i}`,
        { domains: domains(3, i * 3), distinct_domains: 3, total: i },
      ]),
    );
    const reply = { server_time: 1, uuid: 'u', appid: 'a', spiderid: 'link', total_crawlids: 20_000, crawlids };
    const value = replyValue(reply, 200_000);
    expect(Buffer.byteLength(value)).toBeLessThanOrEqual(200_000);
    const out = JSON.parse(value) as {
      crawlids: Record<string, { domains: object; total: number }>;
      cut: Record<string, number>;
    };
    expect(out.cut.domains_per_crawl).toBe(0);
    expect(out.cut.crawlids_listed).toBe(Object.keys(out.crawlids).length);
    expect(out.crawlids['crawl-19999']).toEqual({ domains: {}, distinct_domains: 3, total: 19_999 });
    expect(out.crawlids['crawl-0']).toBeUndefined();
  });

  it('answers with an error and the scalar fields when no cut fits', () => {
    const reply = { server_time: 1, uuid: 'u', appid: 'a', stats: 'queue', queues: { huge: 'x'.repeat(300_000) } };
    const out = JSON.parse(replyValue(reply, 100_000));
    expect(out).toMatchObject({ server_time: 1, uuid: 'u', appid: 'a', stats: 'queue', error: 'reply too large' });
    expect(out.reason).toMatch(/over the 100000-byte message limit \(KAFKA_MAX_MESSAGE_BYTES\)/);
    expect(out.queues).toBeUndefined();
  });
});
