/**
 * A Kafka outage mid-crawl (issue 48 item 5, `npm run bench:sizes`): the drill of bench/lib/drill-kafka-outage.ts at
 * the size. A crawl of BENCH_OUTAGE_PAGES (2000) pages over BENCH_OUTAGE_HOSTS (10) hosts, 2 workers,
 * `LEASE_TIMEOUT` 5 s, `QUEUE_HITS` 50 per second, reclaim every second; once BENCH_OUTAGE_AFTER (500) pages are done
 * the crawl's broker stops for BENCH_OUTAGE_S (60) seconds. Targets: every page completes and none fails, no page is
 * fetched more than twice, and the crawlers stop fetching within a few seconds of the stop.
 */
import { kafkaOutageDrill } from '../lib/drill-kafka-outage.ts';
import { envInt } from '../lib/env.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';

export const description = 'Kafka down for 60 s mid-crawl (5 s leases): failed pages, fetches per page, halt';

export const targets: Target[] = [
  { metric: 'missing_pages', op: '<=', value: 0, label: 'pages missing' },
  { metric: 'failed', op: '<=', value: 0, label: 'pages failed' },
  { metric: 'max_fetches_per_page', op: '<=', value: 2, label: 'fetches of one page' },
];

export const headline: [string, string][] = [
  ['pages', 'pages'],
  ['failed', 'failed'],
  ['max_fetches_per_page', 'max fetches/page'],
  ['duplicate_share', 'duplicate share'],
  ['fetched_before_halt', 'fetched before halt'],
  ['halt_ms', 'halt after stop (ms)'],
  ['fetched_while_down', 'fetched while down'],
  ['down_s', 'Kafka down (s)'],
  ['seconds', 'crawl (s)'],
];

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const o = {
    pages: envInt('BENCH_OUTAGE_PAGES', 2000),
    hosts: envInt('BENCH_OUTAGE_HOSTS', 10),
    workers: envInt('BENCH_OUTAGE_WORKERS', 2),
    downAfterPages: envInt('BENCH_OUTAGE_AFTER', 500),
    downForS: envInt('BENCH_OUTAGE_S', 60),
    timeoutS: envInt('BENCH_OUTAGE_TIMEOUT_S', 900),
  };
  for (const [k, v] of Object.entries(o)) ctx.input(k, v);
  const r = await kafkaOutageDrill(ctx, o);
  return {
    pages: r.pages,
    completed: r.completed,
    failed: r.failed,
    missing_pages: r.pages - r.completed,
    page_messages: r.pageMessages,
    urls: r.urls,
    duplicate_share: Number(r.duplicateShare.toFixed(4)),
    max_fetches_per_page: r.maxFetchesPerPage,
    fetched_while_down: r.fetchedWhileDown,
    fetched_before_halt: r.fetchedBeforeHalt,
    halt_ms: r.haltMs,
    down_s: Number(r.downSeconds.toFixed(1)),
    seconds: Number(r.seconds.toFixed(1)),
  };
}
