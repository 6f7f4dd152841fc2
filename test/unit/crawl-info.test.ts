import { describe, expect, it } from 'vitest';
import type { CrawlInfo, CrawlWaits } from '../../lib/frontier-model.ts';
import { mergeInfos } from '../../lib/redis/crawl-info.ts';

describe('mergeInfos (one crawl over partitions)', () => {
  const info = (waits?: CrawlWaits): CrawlInfo => ({
    settings: { appid: 'a', crawlid: 'c' } as CrawlInfo['settings'],
    queued: 1,
    leased: 0,
    done: 0,
    failed: 0,
    domains: {},
    ...(waits ? { waits } : {}),
  });

  it('sums the waits and keeps the earlier due times, with the retries of the request due first', () => {
    const a = { throttledDomains: 1, throttleDueMs: 5000, retrying: 1, retryDueMs: 9000, retries: 1 };
    const b = { throttledDomains: 2, throttleDueMs: 3000, retrying: 2, retryDueMs: 7000, retries: 2 };

    const [merged] = mergeInfos([info(a), info(), info(b)]);

    expect(merged?.waits).toEqual({
      throttledDomains: 3,
      throttleDueMs: 3000,
      retrying: 3,
      retryDueMs: 7000,
      retries: 2,
    });
  });
});
