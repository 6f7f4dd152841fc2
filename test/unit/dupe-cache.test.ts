/** The crawler's dupefilter cache: an exact fingerprint set, tokens per dupefilter generation, bounded memory. */
import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { DupeCache, FingerprintSet, MAX_CRAWLS } from '../../lib/redis/dupe-cache.ts';

function fp(n: number): Buffer {
  return createHash('sha1').update(String(n)).digest().subarray(0, 8);
}

describe('FingerprintSet', () => {
  test('is exact over 100,000 fingerprints, near-misses included, across growth', () => {
    const set = new FingerprintSet(16);
    const reference = new Set<string>();
    for (let i = 0; i < 100_000; i++) {
      const f = fp(i);
      set.add(f);
      reference.add(f.toString('hex'));
    }
    expect(set.size).toBe(reference.size);
    for (let i = 0; i < 100_000; i++) expect(set.has(fp(i))).toBe(true);
    let falsePositives = 0;
    for (let i = 100_000; i < 200_000; i++) if (set.has(fp(i))) falsePositives++;
    expect(falsePositives).toBe(0);
    // Same low word (same slot), another high word; and the other way round.
    const f = Buffer.from(fp(7));
    f[7] = (f[7] as number) ^ 1;
    expect(set.has(f)).toBe(false);
    const g = Buffer.from(fp(7));
    g[0] = (g[0] as number) ^ 1;
    expect(set.has(g)).toBe(false);
    // Load stays at most one half: 16 bytes a slot.
    expect(set.bytes).toBeLessThanOrEqual(reference.size * 2 * 16);
    // 400,000 SHA-1s: a few hundred ms alone, seconds on a loaded 2-core CI machine (not a timing check).
  }, 30_000);

  test('adding again changes nothing; the all-zero fingerprint is never held', () => {
    const set = new FingerprintSet();
    set.add(fp(1));
    set.add(Buffer.from(fp(1)));
    expect(set.size).toBe(1);
    const zero = Buffer.alloc(8);
    set.add(zero);
    expect(set.has(zero)).toBe(false);
    expect(set.size).toBe(1);
  });
});

describe('DupeCache', () => {
  test('answers only for the token it was told; another token forgets the old generation', () => {
    const cache = new DupeCache(100);
    expect(cache.claim('k')).toBe('');
    cache.add('k', 'T1', [fp(1), fp(2)]);
    expect(cache.claim('k')).toBe('T1');
    expect(cache.has('k', 'T1', fp(1))).toBe(true);
    expect(cache.has('k', 'T2', fp(1))).toBe(false);
    expect(cache.has('other', 'T1', fp(1))).toBe(false);
    cache.add('k', 'T2', [fp(3)]);
    expect(cache.claim('k')).toBe('T2');
    expect(cache.has('k', 'T2', fp(1))).toBe(false);
    expect(cache.has('k', 'T2', fp(3))).toBe(true);
    expect(cache.entries).toBe(1);
    cache.forget('k');
    expect(cache.claim('k')).toBe('');
    expect(cache.entries).toBe(0);
  });

  test('an empty token (no dupefilter) and a cache of size 0 hold nothing', () => {
    const cache = new DupeCache(100);
    cache.add('k', '', [fp(1)]);
    expect(cache.claim('k')).toBe('');
    const off = new DupeCache(0);
    off.add('k', 'T', [fp(1)]);
    expect(off.claim('k')).toBe('');
    expect(off.entries).toBe(0);
  });

  test('never holds more than its entries: when full it starts over', () => {
    const cache = new DupeCache(10);
    cache.add('a', 'T', [fp(1), fp(2), fp(3), fp(4), fp(5), fp(6)]);
    cache.add('b', 'T', [fp(7), fp(8), fp(9), fp(10)]);
    expect(cache.entries).toBe(10);
    cache.add('b', 'T', [fp(11)]);
    expect(cache.entries).toBe(1);
    expect(cache.has('a', 'T', fp(1))).toBe(false);
    expect(cache.has('b', 'T', fp(11))).toBe(true);
    // More than fit at all: nothing is held.
    cache.add(
      'c',
      'T',
      Array.from({ length: 11 }, (_, i) => fp(100 + i)),
    );
    expect(cache.entries).toBe(0);
  });

  test(`holds at most ${MAX_CRAWLS} crawls, dropping the oldest first`, () => {
    const cache = new DupeCache(1_000_000);
    for (let i = 0; i <= MAX_CRAWLS; i++) cache.add(`k${i}`, 'T', [fp(i)]);
    expect(cache.claim('k0')).toBe('');
    expect(cache.claim('k1')).toBe('T');
    expect(cache.claim(`k${MAX_CRAWLS}`)).toBe('T');
    expect(cache.entries).toBe(MAX_CRAWLS);
  });
});
