/**
 * Redis full mid-crawl (issue 48 item 4) at a CI size: the drill of bench/lib/drill-redis-full.ts, whose production
 * size is the `sizes-redis-full` bench scenario. While Redis refuses every write, acks are kept and tried again and
 * leasing stops; once it has room, the crawl completes with every page, each published once and fetched once or
 * twice. Before, a failed ack released its lease and the page was fetched and published again, over and over.
 */
import { afterAll, expect, test } from 'vitest';
import { redisFullDrill } from '../../bench/lib/drill-redis-full.ts';
import { type BenchRedis, openBenchRedis } from '../../bench/lib/redis.ts';
import type { ScenarioContext } from '../../bench/lib/scenario.ts';

let bench: BenchRedis | undefined;
const lines: string[] = [];
const ctx: ScenarioContext = {
  name: 'redis-full',
  progress: (m) => lines.push(m),
  redis: async () => {
    bench ??= await openBenchRedis((m) => lines.push(m));
    return bench;
  },
  input: () => {},
  note: () => {},
};

afterAll(async () => {
  await bench?.close();
});

test('Redis full for 8 s mid-crawl: every page arrives once, none is fetched more than twice', {
  timeout: 300_000,
}, async () => {
  const r = await redisFullDrill(ctx, {
    pages: 800,
    hosts: 8,
    workers: 2,
    fullAfterPages: 150,
    fullForS: 8,
    timeoutS: 240,
  });
  expect(r.timedOut, lines.join('\n')).toBe(false);
  expect(r.fullSeconds).toBeGreaterThanOrEqual(8);
  expect(r.completed).toBe(r.pages);
  expect(r.urls).toBe(r.pages);
  expect(r.duplicateShare).toBeLessThanOrEqual(0.01);
  expect(r.maxFetchesPerPage).toBeLessThanOrEqual(2);
});
