/**
 * The crawler task (ECS Fargate; `crawl-cluster local` starts CRAWLER_WORKERS of these as child processes):
 * reads the configuration, loads the spiders (built-ins and CRAWLER_PLUGINS; a broken plugin: exit code 2 with its
 * name and the reason), registers the spider types it serves, runs the crawl loop, and on SIGTERM stops leasing, finishes or releases
 * in-flight work within SHUTDOWN_DEADLINE_MS, flushes the producer and exits 0.
 */
import { hostname } from 'node:os';
import { S3Client } from '@aws-sdk/client-s3';
import { config } from '../../lib/config/index.ts';
import { browserFetcher, browserPages } from '../../lib/crawl/browser/worker.ts';
import { Crawler } from '../../lib/crawl/crawler/crawler.ts';
import { adaptiveConcurrency, taskLimits } from '../../lib/crawl/crawler/load-signals.ts';
import { startStallWatchdog } from '../../lib/crawl/crawler/stall-watchdog.ts';
import { BODY_BUDGET_SHARE, BodyBudget } from '../../lib/crawl/fetch/body-budget.ts';
import { type BodyStore, directoryBodyStore, s3BodyStore } from '../../lib/crawl/fetch/body-store.ts';
import { UndiciFetcher } from '../../lib/crawl/fetch/fetcher.ts';
import { type ProxySettings, proxySettings } from '../../lib/crawl/fetch/proxy-config.ts';
import { RobotsCache } from '../../lib/crawl/fetch/robots.ts';
import { BROWSER_SPIDER } from '../../lib/crawl/spiders/browser.ts';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { closeSpiders, loadSpiders, openSpiders, pluginList } from '../../lib/crawl/spiders/registry.ts';
import { SpiderSandbox } from '../../lib/crawl/spiders/sandbox.ts';
import type { Spider } from '../../lib/crawl/types.ts';
import { appTopicCreator } from '../../lib/kafka/app-topics.ts';
import { createKafka, createProducer, kafkaSettings } from '../../lib/kafka/client.ts';
import { kafkaTopicLookup } from '../../lib/kafka/per-app.ts';
import { producerSink } from '../../lib/kafka/sink.ts';
import { redisProxyGroupStore } from '../../lib/monitor/proxy-groups.ts';
import { redisSpiderTypeStore } from '../../lib/monitor/spider-types.ts';
import { redisStateWatch } from '../../lib/monitor/state-watch.ts';
import { redisStatsStore } from '../../lib/monitor/stores.ts';
import { createRedis, redisSettings } from '../../lib/redis/client.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { redisRobotsStore } from '../../lib/redis/robots-store.ts';
import { settlesWithin } from '../../lib/timeout.ts';
import { s3ClientSettings } from '../shared/aws.ts';
import { createLogger, monitorLog } from '../shared/observability.ts';

const vars = config();

/** How often the task registers its spider types and proxy groups (as often as the crawler beats). */
const SPIDER_TYPES_EVERY_MS = 10_000;
/** How often a task reads the state markers of its partitions (docs/design.md §12): the heartbeat's rhythm. */
const STATE_CHECK_EVERY_MS = 10_000;

/** `host=ip,host2=ip` → a map (CRAWLER_HOST_MAP). */
function hostMap(spec: string): Record<string, string> | undefined {
  if (!spec) return undefined;
  return Object.fromEntries(spec.split(',').map((pair) => pair.split('=') as [string, string]));
}
const logger = createLogger('crawler', vars.LOG_LEVEL);
const log = monitorLog(logger);

// Signal handlers first: a SIGTERM while starting (connecting to Kafka) must still end in a clean exit 0, not in
// the default action's death by signal. It is acted on once the crawler runs.
let shutdown: ((signal: string) => Promise<void>) | undefined;
let signalledEarly: string | undefined;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    if (shutdown) void shutdown(signal);
    else signalledEarly ??= signal;
  });
}
// Started by `local` (localstack/runtime/crawler-workers.ts), the worker has an IPC channel to it. When `local` dies,
// even by SIGKILL, the channel closes: the worker drains and exits as on SIGTERM instead of crawling on as an orphan
// of pid 1. Its output went to `local`, so writes that fail now (EPIPE) are dropped rather than crashing the drain.
// The channel is unref'd: it never keeps the worker alive. On ECS there is no channel and this does nothing.
if (process.channel) {
  process.once('disconnect', () => {
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
    if (shutdown) void shutdown('parent-exit');
    else signalledEarly ??= 'parent-exit';
  });
  process.channel.unref();
}

// The spiders first: a broken plugin stops the task at once, naming the module and why, before any connection
// (exit code 2, as an invalid variable: the task is misconfigured, and starting it again cannot help).
let spiders: Map<string, Spider>;
/** The spiders of CRAWLER_PLUGINS: their code runs in the sandbox's thread, under a time and memory budget. */
let sandbox: SpiderSandbox | undefined;
let pluginSpiders: ReadonlySet<string> = new Set();
const builtIns = () => [...spiders.values()].filter((s) => BUILT_IN_SPIDERS.has(s.name));
try {
  spiders = await loadSpiders(pluginList(vars.CRAWLER_PLUGINS));
  await openSpiders(builtIns(), { log });
  pluginSpiders = new Set([...spiders.keys()].filter((name) => !BUILT_IN_SPIDERS.has(name)));
  if (pluginSpiders.size > 0) {
    sandbox = new SpiderSandbox({
      plugins: pluginList(vars.CRAWLER_PLUGINS),
      budgetMs: vars.CRAWLER_PARSE_TIMEOUT_MS,
      memoryMb: vars.CRAWLER_PLUGIN_MEMORY_MB,
      log,
    });
    await sandbox.start();
  }
} catch (error) {
  logger.error('crawler not started: a spider plugin cannot be used', { error: (error as Error).message });
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(2);
}
// CRAWLER_PROXIES and CRAWLER_PROXY_GROUPS are read here (their errors name an entry by position and host, never
// its credentials).
let proxies: ProxySettings;
try {
  proxies = proxySettings(vars.CRAWLER_PROXIES, vars.CRAWLER_PROXY_GROUPS);
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(2);
}
// Browser workers serve the browser spider type only, and only they do: an HTML crawler never leases a page that
// needs Chromium (docs/spiders-browser.md).
const spiderTypes = vars.CRAWLER_SPIDERS
  ? vars.CRAWLER_SPIDERS.split(',').map((s) => s.trim())
  : [...spiders.keys()].filter((s) => s !== BROWSER_SPIDER);
const browserWorker = spiderTypes.includes(BROWSER_SPIDER);
if (browserWorker && spiderTypes.length > 1) {
  process.stderr.write(
    `CRAWLER_SPIDERS: a browser worker serves "${BROWSER_SPIDER}" only (got ${spiderTypes.join(', ')})\n`,
  );
  process.exit(2);
}
for (const s of spiderTypes) {
  if (!spiders.has(s)) {
    process.stderr.write(
      `CRAWLER_SPIDERS: unknown spider type "${s}" (registered: ${[...spiders.keys()].join(', ')})\n`,
    );
    process.exit(2);
  }
}

const redis = createRedis({ ...redisSettings(vars), connectionName: 'crawler' });
const kafka = createKafka(kafkaSettings(vars));
const producer = createProducer(kafka);
// Per-app copies ask whether their topic exists (one metadata request, no retries) before the first send.
const topicLookup = kafkaTopicLookup(kafka);
// ...and create a new app's topics then (KAFKA_APPID_TOPICS_MAX bounds how many apps).
const createTopic = vars.KAFKA_APPID_TOPICS ? appTopicCreator(kafka, vars, log) : undefined;
await producer.connect();
// The task's CPU and memory (the least of its own cgroup's limit, the task size the stack states and the machine's
// memory): adaptive concurrency measures against them, and bodies in flight may hold at most a quarter of the
// memory at once (lib/crawl/fetch/body-budget.ts).
const limits = taskLimits(undefined, { taskBytes: vars.CRAWLER_TASK_MEMORY_MIB * 1024 * 1024 });
const bodyBudget = new BodyBudget(Math.floor(limits.memoryBytes * BODY_BUDGET_SHARE));
const fetcher = new UndiciFetcher({
  bodyBudget,
  userAgent: vars.USER_AGENT,
  connectTimeoutMs: vars.FETCH_TIMEOUT_MS,
  headersTimeoutMs: vars.FETCH_TIMEOUT_MS,
  bodyTimeoutMs: vars.FETCH_TIMEOUT_MS,
  maxBodyBytes: vars.MAX_BODY_BYTES,
  maxRedirects: vars.MAX_REDIRECTS,
  allowPrivateNetworks: vars.ALLOW_PRIVATE_NETWORKS,
  resolve: hostMap(vars.CRAWLER_HOST_MAP),
  trustedHosts: vars.CRAWLER_TRUSTED_HOSTS ? vars.CRAWLER_TRUSTED_HOSTS.split(',') : undefined,
  proxies: proxies.proxies,
  proxyGroups: proxies.groups,
  proxySessions: { sessionMs: vars.CRAWLER_PROXY_SESSION_MS, restMs: vars.CRAWLER_PROXY_REST_MS },
  // Counted with the page counters once the crawler exists (no request is fetched before it does).
  onProxyOutcome: (proxy, outcome) => crawler.countProxy(proxy, outcome),
});
if (proxies.proxies.length > 0 || proxies.groups.size > 0) {
  logger.info('fetching through proxies', {
    proxies: proxies.proxies.map((p) => p.name),
    groups: Object.fromEntries([...proxies.groups].map(([group, list]) => [group, list.map((p) => p.name)])),
  });
}
// S3 on AWS (BODY_STORE_BUCKET, set by the stack; locally a bucket in LocalStack, AWS_ENDPOINT_URL), else a local
// directory, else none: bodies over the message limit are then cut. One S3 client for the task's life.
const s3 = vars.BODY_STORE_BUCKET ? new S3Client(s3ClientSettings(vars)) : undefined;
const bodyStore: BodyStore | undefined = s3
  ? s3BodyStore(s3, vars.BODY_STORE_BUCKET)
  : vars.BODY_STORE_DIR
    ? directoryBodyStore(vars.BODY_STORE_DIR)
    : undefined;

const robots = vars.ROBOTSTXT_OBEY
  ? new RobotsCache({ store: redisRobotsStore(redis, vars.REDIS_KEY_PREFIX), fetcher })
  : undefined;
// A browser worker renders its pages in headless Chromium; every request they make goes through `fetcher`.
const browser = browserWorker
  ? browserFetcher(vars, { fetcher, robots, memoryBytes: limits.memoryBytes, log })
  : undefined;
const crawler = new Crawler({
  frontier: new Frontier(redis, frontierOptions(vars)),
  fetcher: browser ?? fetcher,
  robots,
  sink: producerSink(producer, { compression: vars.KAFKA_COMPRESSION, topics: topicLookup, createTopic }),
  stats: redisStatsStore(redis, vars.REDIS_KEY_PREFIX),
  spiders,
  spiderTypes,
  sandbox: sandbox && {
    spiders: pluginSpiders,
    run: (spider, request, response, links) => (sandbox as SpiderSandbox).run(spider, request, response, links),
  },
  parseTimeoutMs: vars.CRAWLER_PARSE_TIMEOUT_MS,
  maxLinks: vars.CRAWLER_MAX_LINKS,
  topicPrefix: vars.KAFKA_TOPIC_PREFIX,
  appidTopics: vars.KAFKA_APPID_TOPICS,
  base64: vars.KAFKA_BASE_64_ENCODE,
  maxMessageBytes: vars.KAFKA_MAX_MESSAGE_BYTES,
  bodyStore,
  concurrency: browser ? browserPages(vars, limits.memoryBytes) : vars.CRAWLER_CONCURRENCY || 16,
  domainConcurrency: vars.CRAWLER_DOMAIN_CONCURRENCY,
  adaptive: browser ? undefined : adaptiveConcurrency(vars, limits, () => bodyBudget.share),
  retryTimes: vars.RETRY_TIMES,
  retryBaseDelayMs: vars.RETRY_BASE_DELAY_MS,
  leaseMs: vars.LEASE_TIMEOUT * 1000,
  userAgent: vars.USER_AGENT,
  ip: vars.EGRESS_IP || undefined,
  nodeId: `${hostname()}:${process.pid}`,
  host: hostname(),
  log,
});
crawler.start();
const watchdog = startStallWatchdog(vars.CRAWLER_STALL_EXIT_MS);
// The types this task serves and its proxy groups, registered with the heartbeat's rhythm: the kafka-monitor accepts
// requests for them (lib/monitor/spider-types.ts, lib/monitor/proxy-groups.ts). Best effort: a Redis blip is logged
// and the next beat registers again.
const spiderTypeStore = redisSpiderTypeStore(redis, vars.REDIS_KEY_PREFIX);
const proxyGroupStore = redisProxyGroupStore(redis, vars.REDIS_KEY_PREFIX);
const proxyGroups = [...proxies.groups.keys()];
const registerTypes = () => {
  const now = Date.now();
  void Promise.all([spiderTypeStore.register(spiderTypes, now), proxyGroupStore.register(proxyGroups, now)]).catch(
    (error: Error) => logger.warn('spider types or proxy groups not registered', { error: error.message }),
  );
};
registerTypes();
const registration = setInterval(registerTypes, SPIDER_TYPES_EVERY_MS);
registration.unref();
// A task lives across a cache node's replacement, so it is the first to see a partition's state marker vanish: the
// loss is logged as ERROR and noted for health and `info` (lib/monitor/state-watch.ts). Best effort, like the beat.
const stateWatch = redisStateWatch(redis, {
  prefix: vars.REDIS_KEY_PREFIX,
  typeEnabled: vars.SCHEDULER_TYPE_ENABLED,
  partitions: vars.FRONTIER_PARTITIONS,
  log,
  who: `crawler ${hostname()}:${process.pid}`,
});
const checkState = () =>
  void stateWatch
    .check(spiderTypes)
    .catch((error: Error) => logger.warn('state markers not read', { error: error.message }));
checkState();
const stateChecks = setInterval(checkState, STATE_CHECK_EVERY_MS);
stateChecks.unref();
logger.info('crawler started', {
  node: process.version,
  spiderTypes,
  concurrency:
    vars.CRAWLER_CONCURRENCY > 0
      ? vars.CRAWLER_CONCURRENCY
      : `adaptive ${Math.min(vars.CRAWLER_CONCURRENCY_MIN, vars.CRAWLER_CONCURRENCY_MAX)}-${vars.CRAWLER_CONCURRENCY_MAX}`,
  bodyStore: vars.BODY_STORE_BUCKET ? `s3://${vars.BODY_STORE_BUCKET}` : 'directory',
  memoryBytes: limits.memoryBytes,
  bodyBudgetBytes: bodyBudget.limitBytes,
});

let stopping = false;
shutdown = async (signal: string): Promise<void> => {
  if (stopping) return;
  stopping = true;
  logger.info('stopping', { signal, deadlineMs: vars.SHUTDOWN_DEADLINE_MS });
  let code = 0;
  try {
    clearInterval(registration);
    clearInterval(stateChecks);
    const { released } = await crawler.stop(vars.SHUTDOWN_DEADLINE_MS);
    await closeSpiders(builtIns(), (spider, error) =>
      logger.warn('spider close() failed', { spider, error: (error as Error)?.message ?? String(error) }),
    );
    await sandbox?.close();
    await watchdog.stop();
    await producer.disconnect();
    await topicLookup.close();
    await createTopic?.close();
    logger.info('stopped', { pages: crawler.pages, restamps: crawler.restamps, released });
  } catch (error) {
    logger.error('shutdown failed', { error: (error as Error).message });
    code = 1;
  }
  // What can still be open is a robots.txt lookup no request waits for any more: not worth waiting for.
  await browser?.close().catch(() => undefined);
  await settlesWithin(fetcher.close(), 1000);
  s3?.destroy();
  redis.disconnect();
  process.exit(code);
};
if (signalledEarly) void shutdown(signalledEarly);
