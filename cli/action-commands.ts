/**
 * `crawl-cluster info`, `stop` and `stats`: each sends one request with a fresh uuid to `<p>.incoming`,
 * waits a bounded time for the redis-monitor's reply with that uuid on `<p>.outbound_firehose`, and prints
 * it for a person (tables) or, with `--json`, as it came.
 */
import { Argument, type Command } from 'commander';
import { config } from '../lib/config/index.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import { FRONTIER_STATE_LOST } from '../lib/monitor/state-watch.ts';
import { isObject } from '../lib/schemas/bounds.ts';
import { validateRequest } from '../lib/schemas/index.ts';
import statsSchema from '../lib/schemas/stats.schema.json' with { type: 'json' };
import { DEFAULT_APPID, positiveSeconds } from './options.ts';
import { type Output, printTable } from './output.ts';
import { ClusterSession, type Message, noClusterHint, requestReply, requestUuid } from './reply-wait.ts';

/** How long a command waits for its reply unless told (`--timeout`). */
const DEFAULT_REPLY_TIMEOUT_S = 10;

/** Options every action command has. */
interface CommonOptions {
  appid: string;
  prefix?: string;
  timeout: number;
}

type ActionOptions = CommonOptions & { spiderid: string; crawlid?: string };

/** `crawl-cluster info`, `stop` and `stats`. */
export function registerActions(program: Command, out: Output): void {
  common(
    program
      .command('info')
      .description('ask the cluster what is pending, by domain: for one crawl (--crawlid) or every crawl of the app')
      .option('--crawlid <crawlid>', 'one crawl (default: every crawl of the app)')
      .option('--spiderid <spiderid>', 'the spider the crawls run on', 'link'),
    'info',
  ).action(async (opts: ActionOptions) => {
    const request: Message & { appid: string; uuid: string } = {
      uuid: requestUuid(),
      appid: opts.appid,
      spiderid: opts.spiderid,
      action: 'info',
    };
    if (opts.crawlid !== undefined) request.crawlid = opts.crawlid;
    const reply = await ask('info', request, opts);
    if (out.json) out.data(reply);
    else printInfo(out, reply);
  });

  common(
    program
      .command('stop')
      .description('stop a crawl: purge its pending requests (no later child of it is queued) and say how many')
      .requiredOption('--crawlid <crawlid>', 'the crawl to stop')
      .option('--spiderid <spiderid>', 'the spider the crawl runs on', 'link'),
    'stop',
  ).action(async (opts: ActionOptions & { crawlid: string }) => {
    const request = {
      uuid: requestUuid(),
      appid: opts.appid,
      spiderid: opts.spiderid,
      action: 'stop',
      crawlid: opts.crawlid,
    };
    const reply = await ask('stop', request, opts);
    if (out.json) out.data(reply);
    else out.info(stopLine(reply));
  });

  common(
    program
      .command('stats')
      .description('ask the cluster for statistics: counters per time window, live nodes, queue backlogs')
      .addArgument(new Argument('[type]', 'which component').choices(statsSchema.properties.stats.enum).default('all')),
    'stats',
  ).action(async (type: string, opts: CommonOptions) => {
    const reply = await ask('stats', { uuid: requestUuid(), appid: opts.appid, stats: type }, opts);
    if (out.json) out.data(reply);
    else printStats(out, reply);
  });
}

/** The options and help every action command shares. */
function common(command: Command, what: string): Command {
  return command
    .option('--appid <appid>', 'the application (3-40 characters); `crawl` uses the same default', DEFAULT_APPID)
    .option('--prefix <prefix>', 'topic prefix (default: KAFKA_TOPIC_PREFIX)')
    .option('--timeout <seconds>', 'how long to wait for the reply', positiveSeconds, DEFAULT_REPLY_TIMEOUT_S)
    .addHelpText(
      'after',
      `\nSends the ${what} request with a fresh uuid and waits for the reply with that uuid on <prefix>.outbound_firehose; the cluster (crawl-cluster local, or the deployed monitors) must be running.\nExit codes: 0 reply printed; 1 no reply in time, the request was rejected, or Kafka unreachable (within about 15 s); 2 invalid input.\nWith --json: the reply exactly as it came.`,
    );
}

/**
 * Validates the request locally (an invalid one ends with exit code 2 before anything is sent), sends it
 * and waits for its reply.
 * @throws CrawlClusterError when no reply comes in time or the cluster rejects the request
 */
async function ask(
  what: string,
  request: Message & { appid: string; uuid: string },
  opts: CommonOptions,
): Promise<Message> {
  validateRequest(request);
  const session = await ClusterSession.open(config(), opts.prefix, ['incoming', 'outboundFirehose']);
  try {
    const reply = await requestReply(session, request, opts.timeout * 1000);
    if (reply === undefined) {
      throw new CrawlClusterError(
        `no reply to the ${what} request within ${opts.timeout} s; ${noClusterHint(session.prefix)}`,
      );
    }
    if (reply.error === FRONTIER_STATE_LOST) {
      throw new CrawlClusterError(`${FRONTIER_STATE_LOST}: ${String(reply.reason ?? 'no reason given')}`);
    }
    if (typeof reply.error === 'string') {
      const details = Array.isArray(reply.details)
        ? (reply.details as { path?: string; message?: string }[])
            .map((d) => `${d.path || '/'} ${d.message}`)
            .join('; ')
        : '';
      throw new CrawlClusterError(
        `the cluster rejected the ${what} request: ${reply.error}${details ? ` (${details})` : ''}`,
      );
    }
    return reply;
  } finally {
    await session.close();
  }
}

type DomainSummary = { low_priority?: number; high_priority?: number; total?: number };

function domainRows(domains: unknown): [string, DomainSummary][] {
  const entries = Object.entries((domains ?? {}) as Record<string, DomainSummary>);
  return entries.sort(([a, x], [b, y]) => (y.total ?? 0) - (x.total ?? 0) || a.localeCompare(b));
}

const plural = (n: unknown, word: string, words = `${word}s`) => `${n} ${n === 1 ? word : words}`;

/** An info reply as a heading and a table of domains with pending counts and priorities. */
export function printInfo(out: Output, reply: Message): void {
  const spider = `spider ${reply.spiderid}`;
  if (isObject(reply.crawlids)) {
    out.info(
      `app ${reply.appid} (${spider}): ${plural(reply.total_pending, 'request')} pending in ${plural(reply.total_crawlids, 'crawl')}, ${plural(reply.total_domains, 'domain')}`,
    );
    const rows: string[][] = [];
    for (const [crawlid, crawl] of Object.entries(reply.crawlids as Record<string, Message>)) {
      for (const [domain, d] of domainRows(crawl.domains)) rows.push([crawlid, ...domainCells(domain, d)]);
    }
    if (rows.length > 0) {
      printTable(out, ['CRAWLID', 'DOMAIN', 'PENDING', 'LOW PRIORITY', 'HIGH PRIORITY'], rows);
      out.info(PRIORITY_NOTE);
    }
    return;
  }
  // Scrapy Cluster sends `expires` as a string of epoch seconds; 0 means never.
  const at = Number(reply.expires);
  const expires = Number.isFinite(at) && at > 0 ? `, expires ${new Date(at * 1000).toISOString()}` : '';
  out.info(
    `crawl ${reply.crawlid} of app ${reply.appid} (${spider}): ${plural(reply.total_pending, 'request')} pending in ${plural(reply.total_domains, 'domain')}${expires}`,
  );
  const rows = domainRows(reply.domains).map(([domain, d]) => domainCells(domain, d));
  if (rows.length > 0) {
    printTable(out, ['DOMAIN', 'PENDING', 'LOW PRIORITY', 'HIGH PRIORITY'], rows);
    out.info(PRIORITY_NOTE);
  }
}

/**
 * The priorities of an info reply are those of the queued requests (docs/contract.md): the seed's (`crawl
 * --priority`, 1-100), 10 lower for each link hop and each retry. Said under the table, so -19 is not a surprise.
 */
export const PRIORITY_NOTE =
  "priorities are the queued requests': the seed's (1-100), 10 lower per link hop and per retry";

function domainCells(domain: string, d: DomainSummary): string[] {
  return [domain, String(d.total ?? 0), String(d.low_priority ?? ''), String(d.high_priority ?? '')];
}

/** A stop reply as one sentence. */
function stopLine(reply: Message): string {
  return `purged ${plural(reply.total_purged, 'pending request')} of crawl ${reply.crawlid} (app ${reply.appid}, spider ${reply.spiderid})`;
}

/** The contract's windows in seconds and how a column names them. */
const WINDOWS: [string, string][] = [
  ['900', '15m'],
  ['3600', '1h'],
  ['21600', '6h'],
  ['43200', '12h'],
  ['86400', '1d'],
  ['604800', '7d'],
  ['lifetime', 'lifetime'],
];

/** The most domains listed per queue; the backlog total covers them all. */
const MAX_QUEUE_DOMAINS = 20;

/** A stats reply as one section per component: counters per window as columns, nodes, backlogs. */
export function printStats(out: Output, reply: Message): void {
  out.info(`stats ${reply.stats} for app ${reply.appid} at ${serverTime(reply.server_time)}`);
  printSections(out, reply);
}

function serverTime(t: unknown): string {
  return typeof t === 'number' ? new Date(t * 1000).toISOString() : 'an unknown time';
}

/** Prints the parts of a stats payload it recognises, at any nesting (`all` wraps components). */
function printSections(out: Output, payload: Message, name?: string): void {
  if (isObject(payload.total) && isObject(payload.fail)) {
    printMonitor(out, name ?? String(payload.stats), payload);
    return;
  }
  if (isObject(payload.spiders)) printSpiders(out, payload.spiders);
  if (isObject(payload.machines)) printMachines(out, payload.machines);
  if (isObject(payload.queues)) printQueues(out, payload.queues);
  if (isObject(payload.queue)) printQueues(out, payload.queue);
  for (const component of ['kafka-monitor', 'redis-monitor', 'crawler', 'rest']) {
    const section = payload[component];
    if (isObject(section)) printSections(out, section, component);
  }
}

function windowCells(counts: unknown): string[] {
  const c = isObject(counts) ? counts : {};
  return WINDOWS.map(([key]) => String(c[key] ?? 0));
}

const WINDOW_HEADER = WINDOWS.map(([, label]) => label);

function printMonitor(out: Output, name: string, p: Message): void {
  const nodes = isObject(p.nodes) ? Object.values(p.nodes).flat().length : 0;
  out.info('');
  out.info(`${name}: ${plural(nodes, 'live node')}`);
  const rows = [
    ['total', ...windowCells(p.total)],
    ['fail', ...windowCells(p.fail)],
  ];
  for (const [plugin, counts] of Object.entries(isObject(p.plugins) ? p.plugins : {}).sort(([a], [b]) =>
    a.localeCompare(b),
  )) {
    rows.push([`plugin ${plugin}`, ...windowCells(counts)]);
  }
  printTable(out, ['COUNTER', ...WINDOW_HEADER], rows);
}

function printSpiders(out: Output, spiders: Message): void {
  out.info('');
  out.info(
    `spiders: ${plural(spiders.unique_spider_count ?? 0, 'spider type')} live, ${plural(spiders.total_spider_count ?? 0, 'crawler process', 'crawler processes')}`,
  );
  const rows: string[][] = [];
  for (const [spider, s] of Object.entries(spiders).sort(([a], [b]) => a.localeCompare(b))) {
    if (!isObject(s)) continue;
    for (const [status, counts] of Object.entries(s).sort(([a], [b]) => a.localeCompare(b))) {
      if (isObject(counts)) rows.push([spider, String(s.count ?? 0), status, ...windowCells(counts)]);
    }
  }
  if (rows.length > 0) printTable(out, ['SPIDER', 'PROCESSES', 'STATUS', ...WINDOW_HEADER], rows);
}

function printMachines(out: Output, machines: Message): void {
  out.info('');
  out.info(`machines: ${machines.count ?? 0}`);
  const rows: string[][] = [];
  for (const [machine, m] of Object.entries(machines).sort(([a], [b]) => a.localeCompare(b))) {
    if (!isObject(m)) continue;
    for (const [status, counts] of Object.entries(m).sort(([a], [b]) => a.localeCompare(b))) {
      rows.push([machine, status, ...windowCells(counts)]);
    }
  }
  if (rows.length > 0) printTable(out, ['MACHINE', 'STATUS', ...WINDOW_HEADER], rows);
}

function printQueues(out: Output, queues: Message): void {
  out.info('');
  out.info(`queues: total backlog ${queues.total_backlog ?? 0}`);
  const rows: string[][] = [];
  for (const [queue, q] of Object.entries(queues).sort(([a], [b]) => a.localeCompare(b))) {
    if (!isObject(q)) continue;
    // The queue is named on its total row only; its domains follow under it.
    rows.push([queue, `(${plural(q.num_domains ?? 0, 'domain')})`, String(q.spider_backlog ?? 0)]);
    const domains = Array.isArray(q.domains) ? (q.domains as { domain?: string; backlog?: number }[]) : [];
    const shown = domains.slice(0, MAX_QUEUE_DOMAINS);
    for (const d of shown) rows.push(['', String(d.domain), String(d.backlog ?? 0)]);
    // The reply lists only the busiest domains (docs/contract.md); num_domains counts them all.
    const more = Math.max(Number(q.num_domains ?? 0), domains.length) - shown.length;
    if (more > 0) rows.push(['', `... ${plural(more, 'more domain')}`, '']);
  }
  if (rows.length > 0) printTable(out, ['QUEUE', 'DOMAIN', 'BACKLOG'], rows);
}
