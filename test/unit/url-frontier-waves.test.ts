/**
 * How many serve calls one GetURLs keeps in flight (lib/redis/url-frontier/model.ts serveWavesAhead): more when the
 * request's max URLs per queue is small, never so many that the URLs they may hold pass SERVE_AHEAD_URLS.
 */
import { describe, expect, it } from 'vitest';
import { SERVE_AHEAD_URLS, SERVE_CAP, SERVE_WAVE, serveWavesAhead } from '../../lib/redis/url-frontier/model.ts';

describe('GetURLs waves in flight', () => {
  it('keeps eight in flight for small maxes per queue, two for the largest or none', () => {
    expect(serveWavesAhead(1)).toBe(8);
    expect(serveWavesAhead(100)).toBe(8);
    expect(serveWavesAhead(250)).toBe(8);
    expect(serveWavesAhead(500)).toBe(4);
    expect(serveWavesAhead(1000)).toBe(2);
    // Past the cap a call serves SERVE_CAP per queue at most, so the bound is the cap's.
    expect(serveWavesAhead(1_000_000)).toBe(2);
    // 0: no max per queue.
    expect(serveWavesAhead(0)).toBe(2);
  });

  it('never lets the waves in flight hold more than SERVE_AHEAD_URLS, whatever the max', () => {
    for (let max = 0; max <= 2 * SERVE_CAP; max++) {
      const perQueue = max > 0 ? Math.min(max, SERVE_CAP) : SERVE_CAP;
      const waves = serveWavesAhead(max);
      expect(waves).toBeGreaterThanOrEqual(2);
      expect(waves).toBeLessThanOrEqual(8);
      expect(waves * SERVE_WAVE * perQueue).toBeLessThanOrEqual(SERVE_AHEAD_URLS);
    }
  });
});
