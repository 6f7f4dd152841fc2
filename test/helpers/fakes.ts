/**
 * The unit tier's monitor context (docs/style.md §9): {@link testContext} puts the in-memory fakes together under a
 * fixed clock, the frontier (fake-frontier.ts) and the sink, stores, log and URL frontier (fake-stores.ts); and a
 * fetch result to hand the crawler ({@link htmlResponse}).
 */
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import type { FetchResult } from '../../lib/crawl/types.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { FakeFrontier } from './fake-frontier.ts';
import { FakeSink, MemoryReplyStore, MemoryStatsStore, RecordingLog } from './fake-stores.ts';

/** The fixed clock of {@link testContext} (epoch ms, a whole second): the time of events/scheduled.json. */
export const TEST_NOW = Date.UTC(2026, 10, 22, 15, 0, 0);

/** {@link TEST_NOW} in epoch seconds, as replies carry it in `server_time`. */
export const TEST_NOW_SEC = TEST_NOW / 1000;

/** The node id of {@link testContext}. */
export const TEST_NODE_ID = 'monitor@test-host:4242';

/** A monitor context whose parts are the fakes above, so tests can reach their extra methods. */
export interface TestContext extends MonitorContext {
  frontier: FakeFrontier;
  stats: MemoryStatsStore;
  replies: MemoryReplyStore;
  sink: FakeSink;
  log: RecordingLog;
}

/**
 * A monitor context of fresh fakes: prefix `demo`, per-app topics off, the known spiders, replies kept 300 s,
 * and the clock fixed at {@link TEST_NOW}.
 */
export function testContext(overrides: Partial<TestContext> = {}): TestContext {
  return {
    frontier: new FakeFrontier(),
    stats: new MemoryStatsStore(),
    replies: new MemoryReplyStore(),
    sink: new FakeSink(),
    topicPrefix: 'demo',
    appidTopics: false,
    spiders: BUILT_IN_SPIDERS,
    replyTtlSec: 300,
    nodeId: TEST_NODE_ID,
    log: new RecordingLog(),
    now: () => TEST_NOW,
    ...overrides,
  };
}

/** A 200 text/html response of `body` from `url` (UTF-8), as the fetcher gives it; `fields` change any of it. */
export function htmlResponse(url: string, body: string, fields: Partial<FetchResult> = {}): FetchResult {
  return {
    requestUrl: url,
    url,
    status: 200,
    statusText: 'OK',
    headers: { 'content-type': ['text/html'] },
    requestHeaders: {},
    body: Buffer.from(body),
    text: body,
    encoding: 'utf-8',
    truncated: false,
    redirects: [],
    fetchedMs: 3,
    ...fields,
  };
}
