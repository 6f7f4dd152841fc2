/**
 * The proxy pool's choices: sessions per domain, moving on after a failure, resting a proxy that fails repeatedly, and
 * an even split of new domains.
 */
import { describe, expect, it } from 'vitest';
import { type ProxyEndpoint, ProxyPool } from '../../lib/crawl/fetch/proxy-pool.ts';

const proxies = (n: number): ProxyEndpoint[] =>
  Array.from({ length: n }, (_, i) => ({ name: `p${i}`, url: `http://u:pw@10.0.0.${i + 1}:3128/` }));

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('ProxyPool', () => {
  it('keeps a domain on one proxy for the session, then places it again by load', () => {
    const c = clock();
    const pool = new ProxyPool(proxies(2), { sessionMs: 10_000, now: c.now });
    expect(pool.pick('a.com')?.name).toBe('p0');
    c.t += 5000;
    expect(pool.pick('b.com')?.name).toBe('p1');
    expect(pool.pick('c.com')?.name).toBe('p0');
    for (let i = 0; i < 10; i++) expect(pool.pick('a.com')?.name).toBe('p0');
    // a.com's session ended: p0 and p1 hold one session each now, and the turn gives a.com to p1.
    c.t += 5001;
    expect(pool.pick('a.com')?.name).toBe('p1');
  });

  it('moves a domain to another proxy after a failure through its proxy', () => {
    const pool = new ProxyPool(proxies(2), { now: clock().now });
    const first = pool.pick('a.com')?.name ?? '';
    pool.failed(first, 'a.com');
    const second = pool.pick('a.com')?.name;
    expect(second).not.toBe(first);
    // ...and stays there.
    expect(pool.pick('a.com')?.name).toBe(second);
  });

  it('rests a proxy after 3 failures in a row, and takes it back after the rest', () => {
    const c = clock();
    const pool = new ProxyPool(proxies(2), { restMs: 30_000, now: c.now });
    pool.failed('p0', 'x.com');
    pool.failed('p0', 'y.com');
    pool.succeeded('p0'); // a success in between: the streak starts again
    pool.failed('p0', 'x.com');
    pool.failed('p0', 'y.com');
    expect(pool.resting('p0')).toBe(false);
    pool.failed('p0', 'z.com');
    expect(pool.resting('p0')).toBe(true);
    for (let i = 0; i < 50; i++) expect(pool.pick(`d${i}.com`)?.name).toBe('p1');
    c.t += 30_001;
    expect(pool.resting('p0')).toBe(false);
    expect(pool.pick('new.com')?.name).toBe('p0');
  });

  it('still offers a resting proxy when every proxy rests, and none once the fetch tried them all', () => {
    const pool = new ProxyPool(proxies(2), { failuresToRest: 1, now: clock().now });
    pool.failed('p0', 'a.com');
    pool.failed('p1', 'a.com');
    expect(pool.pick('a.com')?.name).toBe('p0'); // its rest ends first
    expect(pool.pick('a.com', new Set(['p0']))?.name).toBe('p1');
    expect(pool.pick('a.com', new Set(['p0', 'p1']))).toBeUndefined();
  });

  it('splits new domains evenly over the healthy proxies', () => {
    const pool = new ProxyPool(proxies(3), { now: clock().now });
    const count = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const name = pool.pick(`site-${i}.com`)?.name ?? '';
      count.set(name, (count.get(name) ?? 0) + 1);
    }
    expect([...count.values()]).toEqual([1000, 1000, 1000]);
  });

  it('forgets the oldest session past maxSessions', () => {
    const pool = new ProxyPool(proxies(2), { maxSessions: 2, now: clock().now });
    expect(pool.pick('a.com')?.name).toBe('p0');
    expect(pool.pick('b.com')?.name).toBe('p1');
    expect(pool.pick('c.com')?.name).toBe('p0'); // a.com's session was forgotten to make room
    // a.com is placed again, on the proxy that now holds fewer sessions (b.com's was forgotten in turn).
    expect(pool.pick('a.com')?.name).toBe('p1');
    expect(() => new ProxyPool([])).toThrow(RangeError);
  });
});
