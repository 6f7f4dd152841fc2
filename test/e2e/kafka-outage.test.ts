/**
 * A Kafka outage mid-crawl (issue 48 item 5) at a CI size: the drill of bench/lib/drill-kafka-outage.ts, whose size of
 * the issue is the `sizes-kafka-outage` bench scenario. Leases of 5 s and reclaim every second: before crawlers
 * extended their leases, pages waiting on the broker were reclaimed with a try counted until they were given up as
 * "crawlers stopped or stalled", and every page fetched during the outage was fetched again once it was over.
 */
import { afterAll, expect, test } from 'vitest';
import { kafkaOutageDrill } from '../../bench/lib/drill-kafka-outage.ts';
import { type BenchRedis, openBenchRedis } from '../../bench/lib/redis.ts';
import type { ScenarioContext } from '../../bench/lib/scenario.ts';

let bench: BenchRedis | undefined;
const lines: string[] = [];
const ctx: ScenarioContext = {
  name: 'kafka-outage',
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

test('Kafka down for 15 s mid-crawl with 5 s leases: no page fails, none is fetched twice', {
  timeout: 400_000,
}, async () => {
  const r = await kafkaOutageDrill(ctx, {
    pages: 800,
    hosts: 8,
    workers: 2,
    downAfterPages: 150,
    downForS: 15,
    timeoutS: 300,
  });
  expect(r.timedOut, lines.join('\n')).toBe(false);
  expect(r.downSeconds).toBeGreaterThanOrEqual(15);
  expect(r.completed).toBe(r.pages);
  expect(r.failed).toBe(0);
  expect(r.urls).toBe(r.pages);
  expect(r.maxFetchesPerPage).toBe(1);
  expect(r.duplicateShare).toBeLessThanOrEqual(0.01);
});
