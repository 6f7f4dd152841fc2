/**
 * The fault drills of bench/lib/drill.ts at a CI size (their production sizes are the `sizes-redis-full` and
 * `sizes-kafka-outage` bench scenarios): Redis full, then Kafka down, mid-crawl.
 *
 * Before kept acks and pages and the lease keeper (issue 48 items 4 and 5): a failed ack released its lease, so a page
 * was fetched and published again, over and over while Redis was full; with 5 s leases, pages waiting on a stopped
 * broker were reclaimed with a try counted until given up as "crawlers stopped or stalled", and every page fetched
 * during the outage was fetched again once it was over.
 */
import { afterAll, expect, test } from 'vitest';
import { runDrill } from '../../bench/lib/drill.ts';
import { standaloneContext } from '../../bench/lib/standalone-context.ts';

const lines: string[] = [];
const { ctx, close } = standaloneContext('fault-drills', (m) => lines.push(m));

afterAll(close);

test('Redis full for 8 s mid-crawl: every page arrives once, none is fetched more than twice', {
  timeout: 300_000,
}, async () => {
  const r = await runDrill(ctx, {
    disruption: 'redis-full',
    pages: 800,
    hosts: 8,
    workers: 2,
    after: 150,
    forS: 8,
    timeoutS: 240,
  });
  expect(r.timedOut, lines.join('\n')).toBe(false);
  expect(r.disruptedS).toBeGreaterThanOrEqual(8);
  expect(r.completed).toBe(r.pages);
  expect(r.urls).toBe(r.pages);
  expect(r.duplicateShare).toBeLessThanOrEqual(0.01);
  expect(r.maxFetchesPerPage).toBeLessThanOrEqual(2);
});

test('Kafka down for 15 s mid-crawl with 5 s leases: no page fails, none is fetched twice', {
  timeout: 400_000,
}, async () => {
  const r = await runDrill(ctx, {
    disruption: 'kafka-down',
    pages: 800,
    hosts: 8,
    workers: 2,
    after: 150,
    forS: 15,
    timeoutS: 300,
  });
  expect(r.timedOut, lines.join('\n')).toBe(false);
  expect(r.disruptedS).toBeGreaterThanOrEqual(15);
  expect(r.completed).toBe(r.pages);
  expect(r.failed).toBe(0);
  expect(r.urls).toBe(r.pages);
  expect(r.maxFetchesPerPage).toBe(1);
  expect(r.duplicateShare).toBeLessThanOrEqual(0.01);
});
