/** The per-domain in-flight count of a crawler process (lib/crawl/crawler/domain-inflight.ts). */
import { describe, expect, it } from 'vitest';
import { DomainInFlight, MAX_EXCLUDED } from '../../lib/crawl/crawler/domain-inflight.ts';

describe('DomainInFlight', () => {
  it('lists a domain while it has its cap of requests in flight, and says when it drops back under', () => {
    const d = new DomainInFlight(2);
    d.start('a.example');
    expect(d.full).toEqual([]);
    d.start('a.example');
    d.start('b.example');
    expect(d.full).toEqual(['a.example']);
    d.start('a.example');
    expect(d.count('a.example')).toBe(3);
    // Still at its cap after one ends: no wake-up.
    expect(d.end('a.example')).toBe(false);
    expect(d.full).toEqual(['a.example']);
    expect(d.end('a.example')).toBe(true);
    expect(d.full).toEqual([]);
    expect(d.end('b.example')).toBe(false);
    expect(d.count('b.example')).toBe(0);
  });

  it('hands each lease call the same list until a domain reaches or leaves its cap, and at most MAX_EXCLUDED', () => {
    const d = new DomainInFlight(1);
    for (let i = 0; i < MAX_EXCLUDED + 10; i++) d.start(`d${i}.example`);
    const list = d.full;
    expect(list).toHaveLength(MAX_EXCLUDED);
    expect(d.full).toBe(list);
    d.end('d0.example');
    expect(d.full).not.toBe(list);
    expect(d.full).not.toContain('d0.example');
  });

  it('refuses a cap under 1', () => {
    expect(() => new DomainInFlight(0)).toThrow(/>= 1/);
  });
});
