/**
 * The simulated internet's model (localstack/site/internet.ts): the same seed gives the same internet, another seed
 * another one, and the mix of hosts, page sizes, latencies, errors and robots rules is the one asked for.
 */
import { describe, expect, it } from 'vitest';
import {
  BIG_PAGE_BYTES,
  hostAddress,
  INTERNET_DEFAULTS,
  internetGeometry,
  MIN_PAGE_BYTES,
} from '../../localstack/site/internet.ts';

const g = internetGeometry({}, 8080);
const pages = Array.from({ length: g.pages }, (_, n) => g.page(n));
const quantile = (values: number[], q: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(q * (s.length - 1))] as number;
};
const share = (f: (p: (typeof pages)[number]) => boolean) => pages.filter(f).length / pages.length;

describe('simulated internet model', () => {
  it('is the same internet for the same seed and another for another seed', () => {
    const again = internetGeometry({ seed: 1 }, 8080);
    const other = internetGeometry({ seed: 2 }, 8080);
    const sig = (x: typeof g) =>
      JSON.stringify([
        x.hosts,
        Array.from({ length: 200 }, (_, n) => [x.page(n), x.linksOf(n), x.url(n)]),
        x.robotsTxt(3),
        x.hostMap,
      ]);
    expect(sig(again)).toBe(sig(g));
    expect(sig(other)).not.toBe(sig(g));
    expect(other.hosts.map((h) => h.name)).toEqual(g.hosts.map((h) => h.name));
  });

  it('gives every host its own loopback address and a name the host map resolves to it', () => {
    expect(g.hosts).toHaveLength(50);
    expect(new Set(g.hosts.map((h) => h.address)).size).toBe(50);
    expect(g.hosts[0]?.address).toBe('127.0.0.10');
    expect(g.hosts[49]?.address).toBe('127.0.0.59');
    expect(hostAddress(240)).toBe('127.0.1.10');
    for (const h of g.hosts) expect(g.hostMap.split(',')).toContain(`${h.name}=${h.address}`);
    expect(g.url(7)).toMatch(/^http:\/\/web07\.test:8080\/(p|archive)\/7$/);
  });

  it('has exactly the shares of dead, drip, disallowing and Crawl-delay hosts asked for', () => {
    const count = (f: (h: (typeof g.hosts)[number]) => boolean) => g.hosts.filter(f).length;
    expect(count((h) => h.kind === 'dead')).toBe(1);
    expect(count((h) => h.kind === 'drip')).toBe(1);
    expect(count((h) => h.disallowArchive)).toBe(10);
    expect(count((h) => h.crawlDelaySec === 1)).toBe(2);
    const big = internetGeometry({ hosts: 200, pages: 400, deadShare: 0.05, dripShare: 0.1 });
    expect(big.hosts.filter((h) => h.kind === 'dead')).toHaveLength(10);
    expect(big.hosts.filter((h) => h.kind === 'drip')).toHaveLength(20);
    const disallowing = g.hosts.find((h) => h.disallowArchive)?.index as number;
    expect(g.robotsTxt(disallowing)).toBe('User-agent: *\nDisallow: /archive/\n');
    const delayed = g.hosts.find((h) => h.crawlDelaySec)?.index as number;
    expect(g.robotsTxt(delayed)).toContain('Crawl-delay: 1\n');
    const open = g.hosts.find((h) => !h.disallowArchive && !h.crawlDelaySec)?.index as number;
    expect(g.robotsTxt(open)).toBe('User-agent: *\nDisallow:\n');
  });

  it('mixes page sizes from 5 KB to 2 MB, mostly small', () => {
    const bytes = pages.map((p) => p.bytes);
    expect(Math.min(...bytes)).toBeGreaterThanOrEqual(MIN_PAGE_BYTES);
    expect(Math.max(...bytes)).toBeLessThanOrEqual(INTERNET_DEFAULTS.maxBytes);
    expect(Math.max(...bytes)).toBeGreaterThan(1_000_000);
    expect(quantile(bytes, 0.5)).toBeGreaterThan(16_000);
    expect(quantile(bytes, 0.5)).toBeLessThan(25_000);
    expect(quantile(bytes, 0.9)).toBeLessThan(100_000);
    expect(share((p) => p.bytes > BIG_PAGE_BYTES)).toBeGreaterThan(0.005);
    expect(share((p) => p.bytes > BIG_PAGE_BYTES)).toBeLessThan(0.02);
  });

  it('spreads latencies log-normally around the median, with a slow tail and a cap', () => {
    const ms = pages.map((p) => p.latencyMs);
    expect(quantile(ms, 0.5)).toBeGreaterThan(250);
    expect(quantile(ms, 0.5)).toBeLessThan(360);
    expect(quantile(ms, 0.99)).toBeGreaterThan(3 * quantile(ms, 0.5));
    expect(Math.max(...ms)).toBeLessThanOrEqual(INTERNET_DEFAULTS.maxLatencyMs);
    const medians = g.hosts.map((h) => h.medianLatencyMs);
    expect(Math.max(...medians) / Math.min(...medians)).toBeGreaterThan(2);
    const fast = internetGeometry({ medianLatencyMs: 20 });
    expect(
      quantile(
        Array.from({ length: fast.pages }, (_, n) => fast.page(n).latencyMs),
        0.5,
      ),
    ).toBeLessThan(30);
  });

  it('answers some pages with errors, in the shares asked for', () => {
    for (const [error, expected] of [
      ['e500', 0.01],
      ['e503', 0.01],
      ['e429', 0.01],
      ['reset', 0.005],
    ] as const) {
      expect(share((p) => p.error === error)).toBeGreaterThan(expected / 2);
      expect(share((p) => p.error === error)).toBeLessThan(expected * 2);
    }
    expect(share((p) => p.error === 'none')).toBeGreaterThan(0.95);
    const none = internetGeometry({ e500Share: 0, e503Share: 0, e429Share: 0, resetShare: 0, deadShare: 0 });
    expect(Array.from({ length: none.pages }, (_, n) => none.good(n)).every(Boolean)).toBe(true);
  });

  it('says which pages are good, allowed and reachable', () => {
    const dead = g.hosts.find((h) => h.kind === 'dead')?.index as number;
    expect(g.good(dead)).toBe(false);
    expect(g.allowed(dead)).toBe(false);
    const e500 = pages.find((p) => p.error === 'e500' && g.hostOf(p.n).kind === 'ok') as (typeof pages)[number];
    expect(g.good(e500.n)).toBe(false);
    const e429 = pages.find((p) => p.error === 'e429' && g.hostOf(p.n).kind === 'ok') as (typeof pages)[number];
    expect(g.good(e429.n)).toBe(true);
    const archived = pages.find((p) => p.path.startsWith('/archive/') && g.hostOf(p.n).disallowArchive);
    expect(g.allowed(archived?.n as number)).toBe(false);
    // Links stay mostly on their host and reach others: a crawl from 5 seeds covers most of the web.
    const links = Array.from({ length: 500 }, (_, n) => g.linksOf(n).map((m) => m % 50 === n % 50)).flat();
    expect(links.filter(Boolean).length / links.length).toBeGreaterThan(0.6);
    const seeds = [0, 600, 1200, 1800, 2400].map((s) => s + 1);
    const all = g.reachable(seeds, 3);
    expect(all.size).toBeGreaterThan(0.9 * g.pages);
    const polite = g.reachable(seeds, 3, true);
    expect(polite.size).toBeLessThan(all.size);
    for (const n of polite) expect(g.allowed(n)).toBe(true);
    expect(new Set([...all].map((n) => g.hostOf(n).index)).size).toBe(50);
    expect(g.reachable(seeds, 0)).toEqual(new Set(seeds));
    for (const n of g.reachable(1, 1)) expect(n === 1 || g.linksOf(1).includes(n)).toBe(true);
  });
});
