/**
 * The kafka-monitor: every record of `<p>.incoming` is parsed, classified and validated. Crawl requests go
 * into the frontier (one enqueue call per spider type for the whole batch); action, stats and domain
 * requests go on to `<p>.actions` for the redis-monitor; anything invalid is answered on `<p>.rejected`
 * (and on the outbound topics when it carried appid + uuid), never dropped in silence.
 *
 * Failure semantics (docs/design.md §4): a poison record never fails the batch. Only infrastructure failing
 * (Redis or Kafka unreachable) fails records, and only those whose work did not happen; re-processing a
 * record is harmless (the frontier's dupefilter makes enqueue idempotent).
 */

import { registrableDomain } from '../crawl/domain.ts';
import { InvalidUrlError } from '../crawl/extract/url.ts';
import { requestFingerprint } from '../crawl/fingerprint.ts';
import {
  capDetails,
  failureCause,
  type RejectionDetail,
  type RejectionKind,
  SchemaValidationError,
} from '../errors.ts';
import type { CrawlRef, EnqueueOutcome, QueueRequest } from '../frontier-model.ts';
import type { DecodedRecord } from '../kafka/record.ts';
import { clusterTopics } from '../kafka/topics.ts';
import type { OutMessage } from '../ports.ts';
import type { ClassifiedRequest, CrawlRequest } from '../schemas/index.ts';
import type { StatsIncrement } from '../stats-model.ts';
import { fleetAwareParser, type MonitorContext, serverTime } from './context.ts';
import { rejectionLogFor } from './rejection-log.ts';
import { type Reply, sendReplies } from './replies.ts';
import { recordBatchStats } from './stats-report.ts';

/** How much of a rejected message is echoed back in `raw`. */
export const RAW_ECHO_BYTES = 4096;

/** The outcome of one batch. */
export interface IncomingResult {
  /** Records whose work did not happen (infrastructure failure): report them so they are delivered again. */
  failures: DecodedRecord[];
  crawl: Record<EnqueueOutcome, number>;
  forwarded: number;
  rejected: number;
}

/** A rejection message (docs/contract.md "Rejections"). */
interface Rejection extends Reply {
  error: RejectionKind;
  /**
   * The request's crawl: the one a valid crawl request was refused for (stopped, capped, duplicate), or the one an
   * invalid request named (echoed when sane), so a client following that crawl hears of the refusal.
   */
  crawlid?: string;
  /** The request's `spiderid`, echoed when sane (an `unknown_spider` rejection names what it did not know). */
  spiderid?: string;
  details: RejectionDetail[];
  raw: string;
  source: { topic: string; partition: number; offset: number };
  server_time: number;
}

/** The longest prefix of `bytes` of at most `max` bytes that does not end inside a UTF-8 character. */
function utf8Prefix(bytes: Buffer, max: number): string {
  if (bytes.length <= max) return bytes.toString('utf8');
  let end = max;
  // Step back over continuation bytes (10xxxxxx) to the lead byte of the last character, and drop that
  // character if it does not fit whole.
  let lead = end - 1;
  while (lead > 0 && lead > end - 4 && ((bytes[lead] as number) & 0xc0) === 0x80) lead--;
  const b = bytes[lead] as number;
  const width = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  if (lead + width > end) end = lead;
  return bytes.subarray(0, end).toString('utf8');
}

/**
 * The longest `appid`, `uuid`, `crawlid` or `spiderid` a rejection echoes (the appid is its Kafka key); the schemas
 * allow 40.
 */
export const MAX_ECHOED_ID_CHARS = 100;

/** An id worth echoing: a string short enough to be a real one and well-formed (it becomes a Kafka key). */
function echoable(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= MAX_ECHOED_ID_CHARS && value.isWellFormed() ? value : undefined;
}

/** The ids a rejection echoes from its request, so whoever follows the request (by uuid) or its crawl hears. */
const ECHOED_IDS = ['appid', 'uuid', 'crawlid', 'spiderid'] as const;

function rejection(
  ctx: MonitorContext,
  record: DecodedRecord,
  kind: RejectionKind,
  details: RejectionDetail[],
): Rejection {
  const r: Rejection = {
    error: kind,
    details: capDetails(details),
    raw: utf8Prefix(record.value, RAW_ECHO_BYTES),
    source: { topic: record.topic, partition: record.partition, offset: record.offset },
    server_time: serverTime(ctx),
  };
  // Best effort: who sent it, so a waiting client hears about its mistake. Only ids of a sane length are
  // echoed: a 600 KB appid as a Kafka key costs kafkajs minutes to hash (docs/design.md §10: echoes capped).
  if (record.value.length <= 1_048_576) {
    try {
      const parsed = JSON.parse(record.value.toString('utf8')) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
        const ids = parsed as Record<string, unknown>;
        for (const name of ECHOED_IDS) {
          const value = echoable(ids[name]);
          if (value !== undefined) r[name] = value;
        }
      }
    } catch {
      // not JSON: no id to echo
    }
  }
  return r;
}

/** A seed's frontier entry: registrable domain, fingerprint of the canonical URL, and the crawl's settings. */
export function seedEntry(request: CrawlRequest): { crawl: CrawlRef; request: QueueRequest } {
  const { url, ...settings } = request;
  return {
    crawl: { appid: request.appid, crawlid: request.crawlid, settings },
    request: {
      url,
      domain: registrableDomain(url),
      fingerprint: requestFingerprint(url),
      priority: request.priority,
      depth: 0,
    },
  };
}

type CrawlItem = { record: DecodedRecord; entry: ReturnType<typeof seedEntry> };
type ItemOutcome =
  | { item: CrawlItem; outcome: EnqueueOutcome }
  | { item: CrawlItem; outcome: 'failed' }
  | { item: CrawlItem; outcome: 'poison'; error: unknown };

/**
 * Enqueues one spider type's crawl requests in one call. When that call fails on infrastructure
 * ({@link failureCause}), every item failed and is delivered again. When it fails on poison, the culprit is
 * found by enqueueing each item alone: those that fail alone on poison are rejected, the others go in (or
 * are delivered again if infrastructure failed meanwhile).
 */
async function enqueueIsolated(ctx: MonitorContext, spider: string, items: CrawlItem[]): Promise<ItemOutcome[]> {
  const enqueue = (batch: CrawlItem[]) =>
    ctx.frontier.enqueue(
      spider,
      batch.map((i) => i.entry),
      ctx.now(),
    );
  try {
    const outcomes = await enqueue(items);
    return items.map((item, k) => ({ item, outcome: outcomes[k] as EnqueueOutcome }));
  } catch (error) {
    ctx.log.error('enqueue failed', { spider, records: items.length, error: (error as Error).message });
    if (failureCause(error) === 'infrastructure') return items.map((item) => ({ item, outcome: 'failed' }));
    if (items.length === 1) return [{ item: items[0] as CrawlItem, outcome: 'poison', error }];
  }
  const single: ItemOutcome[] = [];
  for (const item of items) {
    try {
      const [outcome] = await enqueue([item]);
      single.push({ item, outcome: outcome as EnqueueOutcome });
    } catch (error) {
      single.push(
        failureCause(error) === 'infrastructure' ? { item, outcome: 'failed' } : { item, outcome: 'poison', error },
      );
    }
  }
  return single;
}

/** What a duplicate seed's rejection says: the URL is in the dupefilter of a crawl with nothing left to do. */
const DUPLICATE_SEED_MESSAGE =
  "the URL is already in this crawl's dupefilter and the crawl has nothing pending; nothing will be fetched (use a new crawlid or wait DUPEFILTER_TIMEOUT)";

/**
 * The duplicate seeds that get no other outcome: those of crawls with nothing queued or leased (finished, or only
 * their dupefilter left). A duplicate of a running crawl (a redelivered record, a URL fed twice) needs no word: the
 * crawl's pages and its `complete` notice follow. One info read per distinct crawl. Infrastructure failing here
 * fails the records (enqueue is idempotent, so they come again); poison leaves them without a rejection (logged).
 */
async function finishedDuplicates(
  ctx: MonitorContext,
  spider: string,
  duplicates: CrawlItem[],
): Promise<{ finished: CrawlItem[]; failed: CrawlItem[] }> {
  const byCrawl = new Map<string, CrawlItem[]>();
  for (const d of duplicates) {
    const id = JSON.stringify([d.entry.crawl.appid, d.entry.crawl.crawlid]);
    byCrawl.set(id, [...(byCrawl.get(id) ?? []), d]);
  }
  const finished: CrawlItem[] = [];
  const failed: CrawlItem[] = [];
  for (const items of byCrawl.values()) {
    const { appid, crawlid } = (items[0] as CrawlItem).entry.crawl;
    try {
      const info = await ctx.frontier.crawlInfo(spider, appid, crawlid, ctx.now());
      if (info === undefined || info.queued + info.leased === 0) finished.push(...items);
    } catch (error) {
      if (failureCause(error) === 'infrastructure') failed.push(...items);
      else
        ctx.log.error('duplicate seed: the crawl could not be read', {
          appid,
          crawlid,
          error: (error as Error).message,
        });
    }
  }
  return { finished, failed };
}

/** The rejection of a record that validated but could not be handled (poison that the schemas did not catch). */
function unprocessable(ctx: MonitorContext, record: DecodedRecord, error: unknown): Rejection {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  ctx.log.error('record could not be handled; rejecting it', { offset: record.offset, error: message });
  return rejection(ctx, record, 'unprocessable', [{ path: '', message: `could not be handled: ${message}` }]);
}

/**
 * The `plugins` names of the kafka-monitor's stats: Scrapy Cluster's handler class names, per request type
 * (counted as `kafka-monitor:plugin:<name>`).
 */
const KAFKA_MONITOR_PLUGINS: Record<ClassifiedRequest['type'], string> = {
  crawl: 'ScraperHandler',
  action: 'ActionHandler',
  stats: 'StatsHandler',
  domain: 'ZookeeperHandler',
};

/** Handles one batch of `<p>.incoming` records (see the module doc for the failure semantics). */
export async function handleIncoming(ctx: MonitorContext, records: DecodedRecord[]): Promise<IncomingResult> {
  const topics = clusterTopics(ctx.topicPrefix);
  const rejections: Rejection[] = [];
  const forwards: { record: DecodedRecord; message: OutMessage }[] = [];
  const crawls = new Map<string, { record: DecodedRecord; entry: ReturnType<typeof seedEntry> }[]>();
  const stats: StatsIncrement[] = [{ name: 'kafka-monitor:total', by: records.length }];
  // The accepted spider types, read (cached) once for the batch: infrastructure failing here fails the batch.
  const parse = await fleetAwareParser(ctx);

  for (const record of records) {
    // Isolation (docs/design.md §10): whatever one record does to parsing or validation is that record's
    // rejection, never the batch's failure.
    let classified: ClassifiedRequest;
    let entry: ReturnType<typeof seedEntry> | undefined;
    try {
      classified = await parse(record.value);
      if (classified.type === 'crawl') entry = seedEntry(classified.request);
    } catch (error) {
      if (failureCause(error) === 'infrastructure' && !(error instanceof SchemaValidationError)) throw error;
      if (error instanceof SchemaValidationError) rejections.push(rejection(ctx, record, error.kind, error.details));
      else if (error instanceof InvalidUrlError) {
        rejections.push(rejection(ctx, record, 'schema', [{ path: '/url', message: error.message }]));
      } else rejections.push(unprocessable(ctx, record, error));
      continue;
    }
    stats.push({ name: `kafka-monitor:plugin:${KAFKA_MONITOR_PLUGINS[classified.type]}` });
    if (classified.type === 'crawl' && entry !== undefined) {
      const list = crawls.get(classified.request.spiderid) ?? [];
      list.push({ record, entry });
      crawls.set(classified.request.spiderid, list);
    } else {
      forwards.push({
        record,
        message: { key: classified.request.appid, value: JSON.stringify(classified.request) },
      });
    }
  }
  const failures: DecodedRecord[] = [];
  const expiredNotices: Reply[] = [];
  const expiredRecords: DecodedRecord[] = [];
  const result: IncomingResult = {
    failures,
    crawl: { queued: 0, duplicate: 0, stopped: 0, expired: 0, capped: 0, unknown_crawl: 0 },
    forwarded: 0,
    rejected: 0,
  };

  // Crawl requests: one enqueue per spider type for the whole batch.
  for (const [spider, items] of crawls) {
    const done = await enqueueIsolated(ctx, spider, items);
    const duplicates = done.filter((d) => d.outcome === 'duplicate').map((d) => d.item);
    const { finished, failed } =
      duplicates.length > 0 ? await finishedDuplicates(ctx, spider, duplicates) : { finished: [], failed: [] };
    for (const d of done) {
      if (failed.includes(d.item)) {
        failures.push(d.item.record);
        continue;
      }
      if (d.outcome === 'failed') {
        failures.push(d.item.record);
        continue;
      }
      if (d.outcome === 'poison') {
        rejections.push(unprocessable(ctx, d.item.record, d.error));
        continue;
      }
      result.crawl[d.outcome] += 1;
      // Every message gets a visible outcome (docs/design.md §10): a crawl whose `expires` has passed gets the
      // `expired` notice expiry would have sent; a re-fed crawlid that was stopped is rejected with the reason.
      const { appid, crawlid, settings } = d.item.entry.crawl;
      // A valid crawl request refused: the rejection names its crawl, whose client follows it by crawlid.
      const refuse = (kind: RejectionKind, path: string, message: string) =>
        rejections.push({ ...rejection(ctx, d.item.record, kind, [{ path, message }]), crawlid });
      if (d.outcome === 'expired') {
        expiredRecords.push(d.item.record);
        expiredNotices.push({
          action: 'expired',
          server_time: serverTime(ctx),
          appid,
          crawlid,
          spiderid: settings?.spiderid ?? spider,
          total_expired: 0,
        });
      } else if (d.outcome === 'capped') {
        refuse(
          'capped',
          '/url',
          `crawl ${JSON.stringify(crawlid)} has reached its domain_max_pages (${settings?.domain_max_pages}) for ${d.item.entry.request.domain}; this seed is not queued`,
        );
      } else if (d.outcome === 'stopped') {
        refuse(
          'stopped',
          '/crawlid',
          `crawl ${JSON.stringify(crawlid)} of app ${JSON.stringify(appid)} was stopped or expired a short while ago and takes no new requests for now; use a new crawlid`,
        );
      } else if (d.outcome === 'duplicate' && finished.includes(d.item)) {
        // Accepted, yet nothing will come of it: without this word its client would wait for pages forever.
        refuse('duplicate', '/url', DUPLICATE_SEED_MESSAGE);
      }
    }
  }
  if (rejections.length > 0) stats.push({ name: 'kafka-monitor:fail', by: rejections.length });

  // Forwards and rejections: one produce call. A rejection reaches outbound too when its client waits there: one
  // with appid and uuid, or with appid and crawlid (a client following that crawl reads outbound, not rejected).
  const rejectionReplies: Reply[] = rejections.filter(
    (r) => r.appid !== undefined && (r.uuid !== undefined || r.crawlid !== undefined),
  );
  rejectionReplies.push(...expiredNotices);
  try {
    await sendReplies(ctx, rejectionReplies, [
      { topic: topics.actions, messages: forwards.map((f) => f.message) },
      { topic: topics.rejected, messages: rejections.map((r) => ({ key: r.appid ?? null, value: JSON.stringify(r) })) },
    ]);
    result.forwarded = forwards.length;
    result.rejected = rejections.length;
    const rejectionLog = rejectionLogFor(ctx.log);
    for (const r of rejections) rejectionLog.note(r, ctx.now());
  } catch (error) {
    ctx.log.error('producing forwards and rejections failed; these records will be delivered again', {
      records: forwards.length + rejections.length,
      error: (error as Error).message,
    });
    failures.push(...forwards.map((f) => f.record), ...expiredRecords);
    const rejected = new Set(rejections.map((r) => `${r.source.partition}:${r.source.offset}`));
    failures.push(...records.filter((r) => rejected.has(`${r.partition}:${r.offset}`)));
  }

  await recordBatchStats(ctx, 'kafka-monitor', stats);
  return result;
}
