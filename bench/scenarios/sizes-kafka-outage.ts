/**
 * A Kafka outage mid-crawl (issue 48 item 5, `npm run bench:sizes`): the `kafka-down` drill of bench/lib/drill.ts at
 * the size. A crawl of BENCH_OUTAGE_PAGES (2000) pages over BENCH_OUTAGE_HOSTS (10) hosts, 2 workers,
 * `LEASE_TIMEOUT` 5 s, `QUEUE_HITS` 50 per second, reclaim every second; once BENCH_OUTAGE_AFTER (500) pages are done
 * the crawl's broker stops for BENCH_OUTAGE_S (60) seconds. CI runs the same drill smaller
 * (test/e2e/fault-drills.test.ts).
 */
import { drillScenario } from '../lib/drill-scenario.ts';

const s = drillScenario(
  'Kafka down for 60 s mid-crawl (5 s leases): failed pages, fetches per page, halt',
  'OUTAGE',
  { disruption: 'kafka-down', pages: 2000, hosts: 10, workers: 2, after: 500, forS: 60 },
  'Kafka down (s)',
);
export const { description, targets, headline, run } = s;
